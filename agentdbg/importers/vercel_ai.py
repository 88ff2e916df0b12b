"""Vercel AI SDK results: ``generateText`` / ``streamText`` results saved as JSON.

A result has ``steps``, one per model call. AI SDK 4 steps carry ``text``,
``reasoning``, ``toolCalls`` (``toolCallId``, ``toolName``, ``args``) and their
``toolResults`` (``result``); AI SDK 5 and later keep only ``content``, a list of parts
(``text``, ``reasoning``, ``tool-call`` with ``input``, ``tool-result`` with ``output``,
``tool-error``). A result is a run; a JSON array of results is one run each. The prompt is
not part of a result: a ``prompt`` or ``messages`` saved beside it is the task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    Source,
    as_source,
    preview,
    text_of,
    token_count,
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import load_json
from agentdbg.importers.sniffing import outline

NAME = "vercel-ai-sdk"
DESCRIPTION = "Vercel AI SDK generateText/streamText results (steps with tool calls and results)"

_PART_TYPES = {"tool-call", "tool-result", "tool-error"}


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    for prefix in ((), ("*",)):
        if shape.has(*prefix, "steps", "*", "stepType"):
            return True, "steps with a stepType (AI SDK 4)"
        parts = shape.strings(*prefix, "steps", "*", "content", "*", "type") & _PART_TYPES
        if parts and shape.has(*prefix, "steps", "*", "content", "*", "toolCallId"):
            return True, f"steps with {', '.join(sorted(parts))} parts (AI SDK 5)"
        if shape.has(*prefix, "steps", "*", "finishReason") and shape.has(*prefix, "steps", "*", "content"):
            return True, "steps with content and a finishReason (AI SDK 5)"
        if shape.has(*prefix, "finishReason") and (shape.has(*prefix, "usage", "promptTokens")
                                                   or shape.has(*prefix, "usage", "inputTokens")):
            return True, "a finishReason and usage in the AI SDK's camelCase"
    return False, "no steps with a stepType or tool-call parts, no finishReason"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    value = load_json(src)
    items = value if isinstance(value, list) else [value]
    result = ImportResult(problems=src.problems)
    results = [item for item in items if _is_result(item)]
    if not results:
        result.unread = "no result (an object with steps, a finishReason or tool calls) in it"
        return result
    for number, item in enumerate(items, 1):
        if not _is_result(item):
            src.problem(f"item {number} is not a result (no steps, finishReason or tool calls); skipped")
            continue
        events, raw = _run(src, item, number if len(items) > 1 else None)
        result.runs.append(events)
        result.raw_count += raw
    if all(item.get("steps") == [] for item in results):
        result.empty_run = True  # results of a call that made no step
    return result


def _is_result(item: Any) -> bool:
    return isinstance(item, dict) and (isinstance(item.get("steps"), list)
                                       or any(key in item for key in ("finishReason", "toolCalls", "toolResults")))


def _run(src: Source, value: dict, number: int | None) -> tuple[list, int]:
    steps = value.get("steps")
    if not isinstance(steps, list):
        steps = [value]  # a result saved without its steps: the result is its one step
    model = next((s["response"]["modelId"] for s in steps if isinstance(s, dict)
                  and isinstance(s.get("response"), dict) and isinstance(s["response"].get("modelId"), str)), "")
    builder = RunBuilder(name=model or (f"result {number}" if number else ""), source=src.path,
                         policy=f"recorded: {model}" if model else "recorded AI SDK result")
    chat = ChatAssembler(builder, src, "vercel")
    _task(builder, value)
    errors = _error_texts(value, steps)
    has_usage = False
    for index, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            builder.raw("vercel step", step, f"step {index} is not an object")
            continue
        reasoning, texts, calls, results = _step_parts(builder, step)
        tokens = _usage(step.get("usage"))
        has_usage = has_usage or tokens is not None
        chat.assistant(texts, calls, tokens, reasoning=reasoning)
        for call_id, name, text, error in results:
            chat.reply(call_id, errors.get(call_id, text) if error else text, error=error, name=name,
                       data={"toolCallId": call_id, "toolName": name})
        warnings = step.get("warnings")
        if isinstance(warnings, list) and warnings:
            builder.raw("vercel warnings", warnings, f"step {index}: {len(warnings)} warning(s)", current=True)
    chat.finish()
    reason = _last_finish(value, steps)
    outcome, message = None, ""
    if reason == "error":
        outcome, message = "error", "finishReason: error"
    elif reason not in (None, "stop"):
        message = f"finishReason: {reason}"
        if reason == "tool-calls":
            outcome = "unfinished"
            message += " (the step limit stopped it with tool calls pending)"
    total = None if has_usage else _usage(value.get("totalUsage") or value.get("usage"))
    return builder.build(outcome=outcome, message=message, total_tokens=total), builder.raw_count


def _task(builder: RunBuilder, value: dict) -> None:
    prompt = value.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        builder.task = prompt
    if isinstance(value.get("system"), str):
        builder.raw("vercel system prompt", value["system"], f"system prompt: {preview(value['system'])}")
    messages = value.get("messages")
    for message in messages if isinstance(messages, list) else []:
        role = message.get("role") if isinstance(message, dict) else None
        text = _content_text(message.get("content")) if isinstance(message, dict) else text_of(message)
        if role == "user" and not builder.task:
            builder.task = text
        else:
            builder.raw("vercel prompt message", message, f"{text_of(role) or 'a'} message: {preview(text)}")


def _step_parts(builder: RunBuilder, step: dict) -> tuple[list, list, list, list]:
    reasoning: list[str] = []
    texts: list[str] = []
    calls: list[Call] = []
    results: list[tuple[str, str, str, bool]] = []
    content = step.get("content")
    if isinstance(content, list):  # AI SDK 5 and later
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(text_of(part.get("text")))
            elif kind == "reasoning":
                reasoning.append(text_of(part.get("text")))
            elif kind == "tool-call":
                calls.append(Call(text_of(part.get("toolName")) or "?", part.get("input", part.get("args", {})),
                                  text_of(part.get("toolCallId"))))
            elif kind in ("tool-result", "tool-error"):
                error = kind == "tool-error"
                body = part.get("error") if error else part.get("output", part.get("result"))
                results.append((text_of(part.get("toolCallId")), text_of(part.get("toolName")),
                                _output_text(body), error))
            else:
                builder.raw("vercel content", part, f"{preview(text_of(kind)) or 'a'} part")
        return reasoning, texts, calls, results
    reasoning_text = step.get("reasoning") if isinstance(step.get("reasoning"), str) else ""
    if not reasoning_text and isinstance(step.get("reasoningDetails"), list):
        reasoning_text = "\n".join(text_of(d.get("text")) for d in step["reasoningDetails"]
                                   if isinstance(d, dict) and d.get("type") == "text")
    reasoning.append(reasoning_text)
    texts.append(text_of(step.get("text")))
    for item in step.get("toolCalls") if isinstance(step.get("toolCalls"), list) else []:
        if isinstance(item, dict):
            calls.append(Call(text_of(item.get("toolName")) or "?", item.get("args", item.get("input", {})),
                              text_of(item.get("toolCallId"))))
    for item in step.get("toolResults") if isinstance(step.get("toolResults"), list) else []:
        if isinstance(item, dict):
            results.append((text_of(item.get("toolCallId")), text_of(item.get("toolName")),
                            _output_text(item.get("result", item.get("output"))), False))
    return reasoning, texts, calls, results


def _error_texts(value: dict, steps: list) -> dict[str, str]:
    """A failed tool's message by call id: a tool-error part keeps only ``{}`` of the
    error, the response's messages keep its text."""
    found: dict[str, str] = {}
    sources = [value.get("response")] + [s.get("response") for s in steps if isinstance(s, dict)]
    for response in sources:
        messages = response.get("messages") if isinstance(response, dict) else None
        for message in messages if isinstance(messages, list) else []:
            content = message.get("content") if isinstance(message, dict) else None
            for part in content if isinstance(content, list) else []:
                output = part.get("output") if isinstance(part, dict) else None
                if isinstance(output, dict) and output.get("type") in ("error-text", "error-json"):
                    found[text_of(part.get("toolCallId"))] = text_of(output.get("value"))
    return found


def _output_text(output: Any) -> str:
    if isinstance(output, dict) and output.get("type") in ("text", "json", "error-text", "error-json") \
            and "value" in output:
        output = output["value"]
    if output == {}:
        return "[the error's message was not saved]"
    return text_of(output)


def _last_finish(value: dict, steps: list) -> str | None:
    for step in reversed(steps):
        if isinstance(step, dict) and isinstance(step.get("finishReason"), str):
            return step["finishReason"]
    reason = value.get("finishReason")
    return reason if isinstance(reason, str) else None


def _usage(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = token_count(usage.get("totalTokens"))
    if total is not None:
        return total
    pairs = (("promptTokens", "completionTokens"), ("inputTokens", "outputTokens"))
    for pair in pairs:
        counted = [n for n in (token_count(usage.get(k)) for k in pair) if n is not None]
        if counted:
            return sum(counted)
    return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(p.get("text")) if isinstance(p, dict) and "text" in p
                         else f"[{text_of(p.get('type')) if isinstance(p, dict) else 'part'}]" for p in content)
    return text_of(content)
