"""mini-swe-agent trajectories (``*.traj.json``): ``{info, messages, trajectory_format}``.

Text-based runs (format ``mini-swe-agent-1``, and v2's text configs): each assistant
message holds a thought and one fenced ``bash`` (or ``mswea_bash_command``) block, the
command the agent ran (tool ``bash``); the ``user`` message after it is the observation
(``<returncode>N</returncode>`` then the output; a non-zero code is an error). A reply
with no block, or more than one, is a parse error, and the format-error message after it
an error observation. Tool-calling runs (``mini-swe-agent-1.1``) are chat messages with
``tool_calls`` and ``tool`` replies, ending with an ``exit`` message. ``info.exit_status``
is the outcome, ``info.submission`` the answer. The grader's verdict (SWE-bench's
``resolved``) is not in the trajectory: the harness writes it to a separate report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    NotImportable,
    Source,
    as_source,
    preview,
    text_of,
    token_count,
)
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import load_json
from agentdbg.importers.openai_chat import content_text
from agentdbg.importers.sniffing import outline, wrong_root

NAME = "mini-swe-agent"
DESCRIPTION = "mini-swe-agent trajectory: {info: {exit_status, submission, model_stats}, messages, trajectory_format}"

_FENCES = ("```bash", "```mswea_bash_command")
_SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if shape.root != "{":
        return False, wrong_root(shape, "the JSON object of a trajectory")
    formats = shape.strings("trajectory_format")
    if any(v.startswith("mini-swe-agent") for v in formats):
        return True, "trajectory_format: mini-swe-agent"
    if shape.has("messages") and (shape.has("info", "mini_version")
                                  or (shape.has("info", "exit_status") and shape.has("info", "model_stats"))):
        return True, "messages beside info.exit_status/mini_version"
    if formats:
        return False, f"a 'trajectory_format' of {', '.join(sorted(formats)[:3])}, not 'mini-swe-agent-*'"
    if not shape.has("messages"):
        return False, "no 'trajectory_format' and no top-level 'messages'"
    if shape.has("info", "exit_status"):
        return False, "'messages' beside 'info.exit_status', but no 'info.mini_version' or 'info.model_stats'"
    return False, "'messages', but no 'info.mini_version' or 'info.exit_status' beside them"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    data = load_json(src)
    if not isinstance(data, dict):
        raise NotImportable(f"{src.path}: a mini-swe-agent trajectory is a JSON object, got {type(data).__name__}")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise NotImportable(f"{src.path}: no 'messages' list")
    result = ImportResult(problems=src.problems)
    events, raw = _run(src, data, messages)
    result.runs.append(events)
    result.raw_count += raw
    return result


def _dig(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or len(value) <= key:
                return None
            value = value[key]
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def task_text(text: str) -> str:
    """The PR description inside SWE-bench's instance template, or the whole prompt."""
    start = text.find("<pr_description>")
    end = text.find("</pr_description>", start + 1)
    if start == -1 or end == -1:
        return text
    inner = text[start + len("<pr_description>"):end].strip("\n")
    return inner.removeprefix("Consider the following PR description:\n")


def fenced_commands(text: str) -> list[str]:
    """The commands in the text's ```bash / ```mswea_bash_command blocks. Linear in the
    text: each search starts where the last one stopped, and a fence's line is looked at
    for a few characters only."""
    commands: list[str] = []
    upcoming = {fence: text.find(fence) for fence in _FENCES}
    newline = -1
    while True:
        found = [(at, fence) for fence, at in upcoming.items() if at != -1]
        if not found:
            return commands
        at, fence = min(found)
        start = at + len(fence)
        if newline < start:
            newline = text.find("\n", start)
            if newline == -1:
                return commands
        pos = start
        if newline - start <= 16 and not text[start:newline].strip():  # not ```bashrc, not ```bash ls```
            close = text.find("```", newline + 1)
            if close == -1:
                return commands
            commands.append(text[newline + 1:close].strip("\n"))
            pos = close + 3
        for other, next_at in upcoming.items():
            if next_at != -1 and next_at < pos:
                upcoming[other] = text.find(other, pos)


def returncode(text: str) -> int | None:
    """N from an observation that starts ``<returncode>N</returncode>``."""
    stripped = text.lstrip()
    if not stripped.startswith("<returncode>"):
        return None
    end = stripped.find("</returncode>", 12, 40)
    try:
        return int(stripped[12:end]) if end != -1 else None
    except ValueError:
        return None


def _usage(message: dict) -> int | None:
    usage = _dig(message, "extra", "response", "usage") or message.get("usage")
    if not isinstance(usage, dict):
        return None
    total = token_count(usage.get("total_tokens"))
    if total is not None:
        return total
    counted = [n for n in (token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens")) if n is not None]
    return sum(counted) if counted else None


class _Reader:
    def __init__(self, src: Source, data: dict):
        self.src = src
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        self.info = info
        model = text_of(_dig(info, "config", "model", "model_name"))
        version = text_of(info.get("mini_version"))
        who = "mini-swe-agent" + (f" {version}" if version else "")
        self.builder = RunBuilder(name=text_of(data.get("instance_id")), source=src.path,
                                  policy=f"recorded: {who} ({model})" if model else f"recorded: {who}")
        self.chat = ChatAssembler(self.builder, src, "mini-swe-agent")
        self.awaiting: StepDraft | None = None  # a text-based step waiting for its observation

    def assistant(self, message: dict, index: int) -> None:
        text = content_text(message.get("content"))
        reasoning = _dig(message, "extra", "response", "choices", 0, "message", "reasoning")
        texts = [reasoning] if isinstance(reasoning, str) and reasoning.strip() else []
        tokens = _usage(message)
        made = message.get("tool_calls")
        if isinstance(made, list) and made:
            calls = []
            for item in made:
                function = item.get("function") if isinstance(item, dict) and isinstance(item.get("function"), dict) else {}
                calls.append(Call(text_of(function.get("name")) or "?", function.get("arguments"),
                                  text_of(item.get("id")) if isinstance(item, dict) else ""))
            self.chat.assistant(texts + [text], calls, tokens)
            self.awaiting = None
            return
        commands = fenced_commands(text)
        thought = text
        if commands:
            cut = min(at for at in (text.find(f) for f in _FENCES) if at != -1)
            thought = text[:cut].strip()
        thought = "\n".join(texts + [thought]) if texts else thought
        if len(commands) == 1:
            command = commands[0]
            self.awaiting = self.builder.step(thought=thought, tool="bash", args={"command": command},
                                              call=f"bash {command}", tokens=tokens)
        else:
            why = "no bash code block" if not commands else f"{len(commands)} bash code blocks, not one"
            self.awaiting = self.builder.step(thought=thought, parse_error=f"the reply has {why}",
                                              output=text, tokens=tokens)

    def observation(self, message: dict, text: str) -> bool:
        """The reply to the step waiting for one; False when no step waits."""
        step, self.awaiting = self.awaiting, None
        if step is None:
            return False
        code = returncode(text)
        failed = step.parse_error is not None or (code is not None and code != 0)
        timed_out = code is None and step.parse_error is None and "timed out" in text[:500]
        step.reply(text, error=failed or timed_out)
        if timed_out:
            step.error_kind, step.error_message = "timeout", preview(text, 300)
        elif code is not None and code != 0:
            step.error_kind, step.error_message = "exception", f"exit code {code}"
        return True

    def tool(self, message: dict, text: str) -> None:
        code = returncode(text)
        extra_code = _dig(message, "extra", "returncode")
        if isinstance(extra_code, int) and not isinstance(extra_code, bool):
            code = extra_code
        exception = text_of(_dig(message, "extra", "exception_info"))
        failed = (code is not None and code != 0) or bool(exception.strip())
        step = self.chat.reply(text_of(message.get("tool_call_id")), text, error=failed, data=message)
        if step is not None and failed:
            step.error_kind = "timeout" if "timed out" in exception.lower() else "exception"
            step.error_message = preview(exception, 300) if exception.strip() else f"exit code {code}"


def _run(src: Source, data: dict, messages: list) -> tuple[list, int]:
    reader = _Reader(src, data)
    builder = reader.builder
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            src.problem(f"message {index + 1} is not an object; kept as a raw record")
            builder.raw("mini-swe-agent message", message, f"message {index + 1} is not an object")
            continue
        role = message.get("role")
        text = content_text(message.get("content"))
        if role == "assistant":
            reader.assistant(message, index)
        elif role == "tool":
            reader.tool(message, text)
        elif role == "user" and not builder.task and not builder.steps:
            builder.task = task_text(text)
        elif role == "user" and reader.observation(message, text):
            pass
        else:
            builder.raw(f"mini-swe-agent {text_of(role) or 'message'}", message,
                        f"{text_of(role)} message: {preview(text)}")
    reader.chat.finish()
    info = reader.info
    status = text_of(info.get("exit_status")) or text_of(_dig(messages[-1] if messages else None, "extra", "exit_status"))
    submission = info.get("submission")
    answer = submission if isinstance(submission, str) and submission else None
    return builder.build(outcome=status or None, answer=answer, message=_stats(info)), builder.raw_count


def _stats(info: dict) -> str:
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    parts = []
    cost = stats.get("instance_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        parts.append(f"cost {cost:.4f}")
    calls = stats.get("api_calls")
    if isinstance(calls, int) and not isinstance(calls, bool):
        parts.append(f"{calls} API calls")
    return ("model stats: " + ", ".join(parts)) if parts else ""
