"""OpenAI Responses API runs: ``Response`` objects, item lists, Agents SDK ``RunState``.

Accepted shapes: a ``Response`` object (``"object": "response"``, its ``output`` items),
a JSON array or JSON Lines of them (one run: the calls of one agent loop); a list of items
(``result.to_input_list()``, a request's ``input``, a saved conversation: ``message``,
``reasoning``, ``function_call`` / ``function_call_output`` paired by ``call_id``, hosted
tool calls such as ``web_search_call``) as a JSON array or JSON Lines; an array of such
lists (a run each); and the Agents SDK's ``RunState`` JSON (``$schemaVersion``,
``original_input``, ``generated_items``, ``model_responses``).

A model turn is a run of consecutive items the model wrote (reasoning, its messages, its
calls); a tool output or a user message ends it. See docs/importers.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    Source,
    as_source,
    params_from_schema,
    preview,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import Record, is_json_lines, load_json, load_json_lines
from agentdbg.importers.sniffing import Outline, outline

NAME = "openai-responses"
DESCRIPTION = "OpenAI Responses API: Response objects, item lists, Agents SDK RunState"

# calls whose result comes in an item of its own, paired by call_id
PAIRED = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
          "computer_call": "computer_call_output", "local_shell_call": "local_shell_call_output",
          "shell_call": "shell_call_output", "apply_patch_call": "apply_patch_call_output"}
OUTPUTS = {output: call for call, output in PAIRED.items()}
# hosted tools: the call and its result in one item
HOSTED = {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call"}
ITEM_TYPES = {"message", "reasoning", *PAIRED, *OUTPUTS, *HOSTED, "mcp_list_tools", "mcp_approval_request",
              "mcp_approval_response", "item_reference", "compaction"}
_MARKER_TYPES = ITEM_TYPES - {"message"}  # "message" alone is also Anthropic's
_MARKER_PARTS = {"input_text", "output_text", "summary_text", "reasoning_text", "input_image", "input_file"}
_TYPE_PATHS = (("*", "type"), ("type",), ("*", "*", "type"))
_PART_PATHS = (("*", "content", "*", "type"), ("content", "*", "type"), ("*", "summary", "*", "type"),
               ("summary", "*", "type"), ("*", "*", "content", "*", "type"))
_FAILED = {"failed", "incomplete", "cancelled"}


def responses_marker(shape: Outline) -> str:
    """Why the outlined head is Responses API content ("" when it is not)."""
    if "response" in shape.strings("object") | shape.strings("*", "object"):
        return "Response objects ('object': 'response')"
    if shape.has("$schemaVersion") and any(shape.has(k) for k in ("generated_items", "original_input", "current_agent")):
        return "an Agents SDK RunState ($schemaVersion, generated_items)"
    types = set().union(*(shape.strings(*p) for p in _TYPE_PATHS)) & _MARKER_TYPES
    parts = set().union(*(shape.strings(*p) for p in _PART_PATHS)) & _MARKER_PARTS
    if types or parts:
        return f"Responses API items ({', '.join(sorted(types | parts))})"
    return ""


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    marker = responses_marker(shape)
    if marker:
        return True, marker
    return False, "no Response objects, RunState or typed Responses items"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    if is_json_lines(src.text):
        records = load_json_lines(src)
    else:
        records = [Record(load_json(src), 0)]
    result = ImportResult(problems=src.problems)
    for run in _runs(src, records):
        events, raw = run()
        result.runs.append(events)
        result.raw_count += raw
    return result


def _is_response(value: Any) -> bool:
    return isinstance(value, dict) and value.get("object") == "response"


def _is_item(value: Any) -> bool:
    return isinstance(value, dict) and (_kind(value) in ITEM_TYPES or "role" in value)


def _runs(src: Source, records: list[Record]) -> list:
    """Each run as a function giving (events, raw count). Consecutive Response objects are
    one run; so are consecutive items."""
    runs: list = []
    responses: list[Record] = []
    items: list[Record] = []

    def close() -> None:
        if responses:
            group = list(responses)
            runs.append(lambda: _responses_run(src, group))
            responses.clear()
        if items:
            group = list(items)
            runs.append(lambda: _items_run(src, [r.value for r in group], [r.line or None for r in group]))
            items.clear()

    for record in records:
        value, line = record.value, record.line or None
        if _is_response(value):
            if items:
                close()
            responses.append(record)
        elif isinstance(value, dict) and "$schemaVersion" in value:
            close()
            runs.append(lambda value=value: _run_state_run(src, value))
        elif isinstance(value, list) and value and all(_is_response(v) for v in value):
            close()
            responses.extend(Record(v, record.line) for v in value)
            close()
        elif isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            close()
            for conversation in value:
                runs.append(lambda conversation=conversation, line=line: _items_run(src, conversation, None, line))
        elif isinstance(value, list):
            close()
            runs.append(lambda value=value, line=line: _items_run(src, value, None, line))
        elif _is_item(value):
            if responses:
                close()
            items.append(record)
        else:
            src.problem(f"a JSON {type(value).__name__} that is not a Response, an item or a RunState: "
                        "nothing to import", line)
    close()
    return runs


# --- one run ------------------------------------------------------------------------------

class _Run:
    """Items -> steps. Items the model wrote are buffered until the turn ends."""

    def __init__(self, src: Source, builder: RunBuilder):
        self.src = src
        self.builder = builder
        self.chat = ChatAssembler(builder, src, "responses")
        self.turn: list[tuple[dict, int | None]] = []
        self.task_set = False

    # items

    def item(self, item: Any, line: int | None = None, note: str = "") -> None:
        if not isinstance(item, dict):
            self.src.problem(f"an item that is not an object ({type(item).__name__}); kept as a raw record", line)
            self.builder.raw("responses item", item, "an item that is not an object")
            return
        kind = _kind(item)
        if _model_side(item):
            self.turn.append((item, line))
            return
        self.end_turn()
        if kind == "message":
            self._message(item, line)
        elif kind in OUTPUTS:
            call_id = text_of(item.get("call_id") or item.get("id"))
            self.chat.reply(call_id, _output_text(item.get("output")), data=item, line=line)
        elif kind == "mcp_list_tools":
            for tool in item.get("tools") if isinstance(item.get("tools"), list) else []:
                if isinstance(tool, dict) and tool.get("name"):
                    self.builder.add_tool(tool_spec(text_of(tool["name"]), text_of(tool.get("description")),
                                                    params_from_schema(tool.get("input_schema"))))
            self.builder.raw("responses item", item, f"MCP tools of {text_of(item.get('server_label'))!r}")
        else:
            self.builder.raw("responses item", item, note or f"{kind or 'untyped'} item")

    def _message(self, item: dict, line: int | None) -> None:
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role == "user" and not self.task_set:
            self.builder.task, self.task_set = text, True
        elif role in ("user", "system", "developer"):
            self.builder.raw(f"responses {role} message", item, f"{role} message: {preview(text)}")
        else:
            self.src.problem(f"a message with role {role!r}, which is not a Responses role; "
                             "kept as a raw record", line)
            self.builder.raw("responses message", item, f"unknown role {role!r}")

    def end_turn(self, tokens: int | None = None) -> list[StepDraft]:
        """The model's turn so far as steps: its reasoning and text are the thought of
        the first call after them (a turn without calls is a text step). A hosted call
        carries its own result, so what the model wrote after it is a new group."""
        turn, self.turn = self.turn, []
        if not turn and tokens is None:
            return []
        steps: list[StepDraft] = []
        reasoning: list[str] = []
        said: list[str] = []
        calls: list[Call] = []
        line = turn[0][1] if turn else None
        for item, _ in turn:
            kind = _kind(item)
            if kind == "reasoning":
                texts = _reasoning_texts(item)
                reasoning.extend(texts)
                if not texts:
                    self.builder.raw("responses item", item, "reasoning with no summary text")
            elif kind == "message":
                said.append(_content_text(item.get("content")))
            elif kind in PAIRED:
                calls.append(_paired_call(kind, item))
            else:
                calls.append(_hosted_call(kind, item))
                made = self._group(reasoning, said, calls, tokens, line)
                step = made[-1]
                self.chat.close(step)
                text, failed = _hosted_result(item)
                step.reply(text, failed or step.parse_error is not None)
                if failed:
                    step.error_kind = "exception"
                    step.error_message = text or f"{kind} {text_of(item.get('status'))}"
                steps.extend(made)
                reasoning, said, calls, tokens = [], [], [], None
        if reasoning or said or calls or tokens is not None:
            steps.extend(self._group(reasoning, said, calls, tokens, line))
        return steps

    def _group(self, reasoning: list[str], said: list[str], calls: list[Call], tokens: int | None,
               line: int | None) -> list[StepDraft]:
        # a text turn's message, not its reasoning, may be the answer; reasoning alone never
        return self.chat.assistant(said, calls, tokens, line, reasoning=reasoning)

    def finish(self) -> None:
        self.end_turn()
        self.chat.finish()


def _kind(item: dict) -> str:
    kind = item.get("type")
    return kind if isinstance(kind, str) else ("message" if "role" in item else "")


def _model_side(item: dict) -> bool:
    """An item the model wrote: reasoning, an assistant message, a call."""
    kind = _kind(item)
    return (kind == "reasoning" or kind in PAIRED or kind in HOSTED
            or (kind == "message" and item.get("role") == "assistant"))


def _reasoning_texts(item: dict) -> list[str]:
    texts = []
    for key in ("summary", "content"):
        parts = item.get(key)
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    if not texts and item.get("encrypted_content"):
        texts.append("[encrypted reasoning]")
    return texts


def _content_text(content: Any) -> str:
    """A message's text: a string, or its parts (``output_text``, ``input_text``,
    ``refusal``; others as ``[type]``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return text_of(content)
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            text = part.get("text", part.get("refusal"))
            texts.append(text if isinstance(text, str) else f"[{text_of(part.get('type')) or 'part'}]")
    return "\n".join(texts)


def _output_text(output: Any) -> str:
    return _content_text(output) if isinstance(output, list) else text_of(output)


def _paired_call(kind: str, item: dict) -> Call:
    call_id = text_of(item.get("call_id") or item.get("id"))
    if kind == "function_call":
        return Call(text_of(item.get("name")) or "?", item.get("arguments"), call_id)
    if kind == "custom_tool_call":
        return Call(text_of(item.get("name")) or "?", text_of(item.get("input")), call_id, freeform=True)
    arguments = item.get("operation") if kind == "apply_patch_call" else item.get("action")
    return Call(kind.removesuffix("_call"), arguments if isinstance(arguments, dict) else {}, call_id)


def _hosted_call(kind: str, item: dict) -> Call:
    if kind == "mcp_call":
        name = text_of(item.get("name")) or "?"
        return Call(name, item.get("arguments"), text_of(item.get("id")))
    if kind == "web_search_call":
        arguments = item.get("action")
    elif kind == "file_search_call":
        arguments = {"queries": item.get("queries")}
    elif kind == "code_interpreter_call":
        arguments = {"code": item.get("code")}
    else:
        arguments = {}
    if isinstance(arguments, dict):
        arguments = {k: v for k, v in arguments.items() if k not in ("type", "sources")}
    return Call(kind.removesuffix("_call"), arguments if isinstance(arguments, dict) else {}, text_of(item.get("id")))


def _hosted_result(item: dict) -> tuple[str, bool]:
    """(what the hosted tool returned, whether it failed)."""
    kind = item.get("type")
    status = text_of(item.get("status"))
    error = item.get("error")
    failed = status in _FAILED or bool(error)
    if error:
        return text_of(error), True
    if kind == "mcp_call" and item.get("output") is not None:
        return text_of(item.get("output")), failed
    if kind == "file_search_call" and item.get("results"):
        return text_of(item.get("results")), failed
    if kind == "code_interpreter_call" and isinstance(item.get("outputs"), list):
        texts = [text_of(o.get("logs")) if o.get("type") == "logs" else f"[{text_of(o.get('type'))}]"
                 for o in item["outputs"] if isinstance(o, dict)]
        if texts:
            return "\n".join(texts), failed
    if kind == "image_generation_call" and item.get("result"):
        return "[image]", failed
    action = item.get("action")
    if kind == "web_search_call" and isinstance(action, dict) and isinstance(action.get("sources"), list):
        urls = [text_of(s.get("url")) for s in action["sources"] if isinstance(s, dict) and s.get("url")]
        if urls:
            return "\n".join(urls), failed
    return f"[{status}]" if status else "", failed


def _usage(usage: Any) -> int | None:
    """A usage record's total (``total_tokens``, else input + output); None when it
    counts no request (a RunState's empty usage)."""
    if not isinstance(usage, dict) or usage.get("requests") == 0:
        return None
    total = token_count(usage.get("total_tokens"))
    if total is not None:
        return total
    counts = [n for n in (token_count(usage.get(k)) for k in ("input_tokens", "output_tokens")) if n is not None]
    return sum(counts) if counts else None


def _tools(definitions: Any) -> list[dict]:
    """Response ``tools``: functions by name, hosted tools by type."""
    specs = []
    for item in definitions if isinstance(definitions, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("function", "custom") or "name" in item:
            if item.get("name"):
                specs.append(tool_spec(text_of(item["name"]), text_of(item.get("description")),
                                       params_from_schema(item.get("parameters"))))
        elif isinstance(item.get("type"), str):
            specs.append(tool_spec(item["type"].removesuffix("_preview"), "a hosted tool"))
    return specs


def _items_run(src: Source, items: Any, lines: list | None, line: int | None = None) -> tuple[list, int]:
    builder = RunBuilder(source=src.path, policy="recorded: OpenAI Responses items")
    run = _Run(src, builder)
    for index, item in enumerate(items if isinstance(items, list) else [items]):
        run.item(item, lines[index] if lines and index < len(lines) else line)
    run.finish()
    return builder.build(), builder.raw_count


def _responses_run(src: Source, records: list[Record]) -> tuple[list, int]:
    responses = [r.value for r in records]
    model = next((text_of(r.get("model")) for r in responses if r.get("model")), "")
    builder = RunBuilder(name=model, source=src.path,
                         policy=f"recorded: {model} (OpenAI Responses)" if model else "recorded: OpenAI Responses")
    run = _Run(src, builder)
    instructions = ""
    for record in records:
        response, line = record.value, record.line or None
        for spec in _tools(response.get("tools")):
            builder.add_tool(spec)
        if response.get("instructions") and text_of(response["instructions"]) != instructions:
            instructions = text_of(response["instructions"])
            builder.raw("responses instructions", response["instructions"], f"instructions: {preview(instructions)}")
        for item in response.get("input") if isinstance(response.get("input"), list) else []:
            run.item(item, line)
        output = response.get("output")
        for item in output if isinstance(output, list) else []:
            run.item(item, line)
        run.end_turn(_usage(response.get("usage")))
    run.finish()
    last = responses[-1]
    status = text_of(last.get("status"))
    outcome, message = None, ""
    if status in _FAILED:
        outcome = f"response {status}"  # the API's own status, named as such
        error = last.get("error") if isinstance(last.get("error"), dict) else {}
        details = last.get("incomplete_details") if isinstance(last.get("incomplete_details"), dict) else {}
        message = ": ".join(m for m in (text_of(error.get("code")), text_of(error.get("message")),
                                        text_of(details.get("reason"))) if m)
    return builder.build(outcome=outcome, message=message), builder.raw_count


def _run_state_run(src: Source, state: dict) -> tuple[list, int]:
    agent = state.get("current_agent") if isinstance(state.get("current_agent"), dict) else {}
    builder = RunBuilder(name=text_of(agent.get("name")), source=src.path,
                         policy="recorded: OpenAI Agents SDK run state")
    run = _Run(src, builder)
    processed = state.get("last_processed_response")
    functions = processed.get("functions") if isinstance(processed, dict) else None
    for function in functions if isinstance(functions, list) else []:
        tool = function.get("tool") if isinstance(function, dict) else None
        if isinstance(tool, dict) and tool.get("name"):
            builder.add_tool(tool_spec(text_of(tool["name"]), text_of(tool.get("description")),
                                       params_from_schema(tool.get("paramsJsonSchema") or tool.get("params_json_schema"))))
    original = state.get("original_input")
    if isinstance(original, str):
        builder.task, run.task_set = original, True
    else:
        for item in original if isinstance(original, list) else []:
            run.item(item)
        run.end_turn()
    usage_of = _usage_by_item(state.get("model_responses"))
    charged: set[int] = set()
    tokens: int | None = None  # the usage of the responses behind the turn being read
    waiting: list[str] = []
    for generated in state.get("generated_items") if isinstance(state.get("generated_items"), list) else []:
        raw_item = generated.get("raw_item") if isinstance(generated, dict) else None
        kind = text_of(generated.get("type")) if isinstance(generated, dict) else ""
        if kind == "tool_approval_item":  # the call itself is its tool_call_item
            name = text_of(generated.get("tool_name") or (raw_item.get("name") if isinstance(raw_item, dict) else ""))
            waiting.append(name)
            builder.raw("agents sdk item", generated, f"waiting for approval: {name}")
            continue
        if not isinstance(raw_item, dict):
            builder.raw("agents sdk item", generated, f"{kind or 'untyped'} item")
            continue
        if _model_side(raw_item):
            response = next((usage_of[k] for k in _keys(raw_item) if k in usage_of), None)
            if response is not None and response[0] not in charged:
                if run.turn:
                    run.end_turn(tokens)  # another model response: another turn
                    tokens = None
                charged.add(response[0])
                if response[1] is not None:
                    tokens = (tokens or 0) + response[1]
        elif run.turn:
            run.end_turn(tokens)
            tokens = None
        run.item(raw_item, note=f"{kind} ({_kind(raw_item) or 'untyped'})")
    run.end_turn(tokens)
    run.finish()
    step = state.get("current_step") if isinstance(state.get("current_step"), dict) else {}
    outcome, message = None, ""
    if step.get("type") == "next_step_interruption":
        outcome = "awaiting approval"
        message = f"waiting for approval: {', '.join(waiting)}" if waiting else "waiting for approval"
    return builder.build(outcome=outcome, message=message), builder.raw_count


def _keys(item: dict) -> list[str]:
    return [text_of(item[k]) for k in ("id", "call_id") if item.get(k)]


def _usage_by_item(responses: Any) -> dict[str, tuple[int, int | None]]:
    """Item id / call id -> (response index, that response's tokens)."""
    found: dict[str, tuple[int, int | None]] = {}
    for index, response in enumerate(responses if isinstance(responses, list) else []):
        if not isinstance(response, dict):
            continue
        tokens = _usage(response.get("usage"))
        for item in response.get("output") if isinstance(response.get("output"), list) else []:
            if isinstance(item, dict):
                for key in _keys(item):
                    found.setdefault(key, (index, tokens))
    return found
