"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

JSON Lines of ``{"timestamp", "type", "payload"}``: ``session_meta`` (the session),
``turn_context`` (a turn's settings: the model), ``response_item`` (what the model saw
and said: messages, reasoning, tool calls and their outputs) and ``event_msg`` (what the
harness reported: the user's prompt, token counts, a command's exit code, a turn's end).
Each prompt the user typed starts a run. Token counts are cumulative over the session:
each step is charged what the total grew by since the count before, so a count written
twice is never counted twice.
"""

from __future__ import annotations

import json
import re
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
from agentdbg.importers.chat import Call
from agentdbg.importers.jsondata import load_json_lines
from agentdbg.importers.sniffing import outline, wrong_root
from agentdbg.importers.turns import Session, Turn

NAME = "codex-rollout"
DESCRIPTION = "OpenAI Codex CLI session rollouts (JSON Lines of session_meta, response_item, event_msg)"

_LINE_TYPES = {"session_meta", "turn_context", "response_item", "event_msg"}
# User messages the harness writes itself: instructions, environment, permissions.
_INJECTED = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>",
             "<permissions instructions>", "<user_shell_command>", "<turn_aborted>")
_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.M)
_HEADER_LINES = 6  # an exec output's header (chunk, wall time, exit code) comes first


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if shape.root != "{":
        return False, wrong_root(shape, "JSON Lines of objects")
    kinds = shape.strings("type") & _LINE_TYPES
    if kinds and shape.has("payload") and shape.has("timestamp"):
        return True, f"rollout lines ({', '.join(sorted(kinds))}) with a payload"
    if kinds:
        return False, f"lines of type {', '.join(sorted(kinds))}, but no 'payload' with a 'timestamp' beside it"
    return False, "no session_meta, response_item or event_msg lines (rollout lines with a 'payload')"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    records = load_json_lines(src)
    prompts = {text_of(r.value["payload"].get("message")).strip() for r in records
               if _event(r.value) == "user_message"}
    reader = _Reader(src, prompts)
    for record in records:
        reader.line(record.value, record.line)
    result = ImportResult(problems=src.problems)
    result.runs = reader.build()
    result.raw_count = sum(t.builder.raw_count for t in reader.session.turns)
    if not records:
        result.unread = "no rollout lines in it"
    elif not reader.session.turns or not any(t.started for t in reader.session.turns):
        result.unread = "no prompt and no model turn in it"
    return result


def _event(value: Any) -> str | None:
    if isinstance(value, dict) and value.get("type") == "event_msg" and isinstance(value.get("payload"), dict):
        kind = value["payload"].get("type")
        return kind if isinstance(kind, str) else None
    return None


class _Reader:
    def __init__(self, src: Source, prompts: set[str]):
        self.src = src
        self.session = Session(src, "codex")
        # When the harness wrote the prompts as events, a user message item with the same
        # text is a copy of one; without those events (older or stripped rollouts) the
        # user message items are the prompts.
        self.prompts = prompts
        self.total: int | None = None  # the last cumulative token count seen

    def build(self) -> list:
        for turn in self.session.turns:
            self._end_of_turn(turn)
        return self.session.build()

    def line(self, value: Any, line: int) -> None:
        session = self.session
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            session.raw(value, f"line {line}: not a rollout line of {{type, payload}}", "line")
            return
        kind, payload = value.get("type"), value["payload"]
        if kind == "session_meta":
            self.session_meta(payload)
            session.raw(value, f"session: {preview(text_of(payload.get('originator')))} "
                               f"{preview(text_of(payload.get('cli_version')))}, cwd {preview(text_of(payload.get('cwd')))}",
                        "session")
        elif kind == "turn_context":
            session.set_model(payload.get("model"))
            session.raw(value, f"turn settings: model {preview(text_of(payload.get('model')))}", "turn settings")
        elif kind == "response_item":
            self.item(payload, value, line)
        elif kind == "event_msg":
            self.event(payload, value, line)
        else:
            session.raw(value, f"{preview(text_of(kind))} line", "line")

    def session_meta(self, meta: dict) -> None:
        session_id = text_of(meta.get("id"))
        if session_id and not self.session.name:
            self.session.name = session_id[:8]
        # No tool registry: a rollout lists only the app's extra tools (dynamic_tools),
        # never the built-in ones (exec_command, apply_patch, ...), which would then look
        # like tools that do not exist.

    # -- response items: what the model saw and said --------------------------------

    def item(self, item: dict, value: dict, line: int) -> None:
        session = self.session
        kind = item.get("type")
        turn = session.current
        if kind == "message":
            self.message(item, value)
        elif kind == "reasoning":
            texts = [text_of(p.get("text")) for key in ("summary", "content")
                     for p in (item.get(key) if isinstance(item.get(key), list) else []) if isinstance(p, dict)]
            turn.extra.setdefault("reasoning", []).extend(t for t in texts if t.strip())
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self.call(turn, item, line)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            text, error = _output(item.get("output"))
            turn.chat.reply(text_of(item.get("call_id")), text, error=error, data=item, line=line)
        elif kind == "web_search_call":
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            args = {k: v for k, v in action.items() if k != "type"}
            step = self._call(turn, Call("web_search", args, text_of(item.get("id"))), line)
            turn.chat.close(step)  # the search's results are not written to the rollout
            if item.get("status") not in (None, "completed"):
                step.error_kind, step.error_message = "exception", f"web search {text_of(item.get('status'))}"
        else:
            session.raw(value, f"{preview(text_of(kind))} item", "item")

    def message(self, item: dict, value: dict) -> None:
        session = self.session
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role == "assistant":
            turn = session.current
            turn.extra.setdefault("said", []).append(text)
            if item.get("phase") == "final_answer":
                self._flush_text(turn)
        elif role == "user" and not text.lstrip().startswith(_INJECTED) and text.strip() in self.prompts:
            pass  # a copy of the prompt event
        elif role == "user" and not text.lstrip().startswith(_INJECTED) and text.strip() and not self.prompts:
            self._flush_text(session.current)
            self._turn_started(session.prompt(text))
        else:
            what = "injected user text" if role == "user" else f"{preview(text_of(role))} message"
            session.raw(value, f"{what}: {preview(text)}", f"{text_of(role) or 'message'} message")

    def call(self, turn: Turn, item: dict, line: int) -> None:
        kind = item.get("type")
        name = _tool_name(item.get("namespace"), text_of(item.get("name")) or "?")
        call_id = text_of(item.get("call_id") or item.get("id"))
        if kind == "custom_tool_call":
            call = Call(name, text_of(item.get("input")), call_id, freeform=True)
        elif kind == "local_shell_call":
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            call = Call("local_shell", {k: v for k, v in action.items() if k != "type"}, call_id)
        else:
            call = Call(name, item.get("arguments"), call_id)
        self._call(turn, call, line)

    def _call(self, turn: Turn, call: Call, line: int):
        said = [t for t in turn.extra.pop("said", []) if t.strip()]
        reasoning = turn.extra.pop("reasoning", [])
        thought = "\n".join(reasoning + said)
        step = turn.chat.call(call, thought, None, line)
        self._charge_waiting(turn, step)
        return step

    def _flush_text(self, turn: Turn) -> None:
        """Text the model wrote and no call followed: a step of its own."""
        said = turn.extra.pop("said", [])
        reasoning = turn.extra.pop("reasoning", [])
        steps = turn.chat.assistant(said, [], None, reasoning=reasoning)
        for step in steps:
            self._charge_waiting(turn, step)

    # -- events: what the harness reported -------------------------------------------

    def event(self, event: dict, value: dict, line: int) -> None:
        session = self.session
        kind = event.get("type")
        if kind == "task_started":
            self._flush_text(session.current)
            self._turn_started(session.next_turn())
        elif kind == "user_message":
            text = text_of(event.get("message"))
            self._flush_text(session.current)
            turn = session.prompt(text)
            self._turn_started(turn)
            images = event.get("images")
            if isinstance(images, list) and images:
                session.raw(value, f"the prompt's {len(images)} image(s)", "prompt images")
        elif kind == "token_count":
            self.tokens(session.current, event)
        elif kind == "exec_command_end":
            self.exit_code(session.current, event)
        elif kind == "patch_apply_end":
            if event.get("success") is False:
                self._mark_error(session.current, text_of(event.get("call_id")),
                                 f"the patch did not apply: {preview(text_of(event.get('stderr')))}")
        elif kind == "task_complete":
            turn = session.current
            self._flush_text(turn)
            if turn.outcome == "error":  # the turn went on after the error and completed
                turn.outcome, turn.message = None, ""
            last = event.get("last_agent_message")
            if isinstance(last, str) and last.strip():
                turn.extra["last_message"] = last
        elif kind == "turn_aborted":
            turn = session.current
            turn.outcome, turn.message = "interrupted", f"turn aborted: {preview(text_of(event.get('reason')))}"
        elif kind == "error":
            turn = session.current
            turn.outcome, turn.message = "error", text_of(event.get("message"))
            session.raw(value, preview(turn.message), "error", current=True)
        elif kind in ("agent_message", "agent_reasoning", "web_search_end", "agent_reasoning_section_break"):
            pass  # the same text or query as a response item already carries
        else:
            session.raw(value, f"{preview(text_of(kind))} event", "event", current=True)

    def _turn_started(self, turn: Turn) -> None:
        turn.extra.setdefault("mark", len(turn.builder.steps))

    def tokens(self, turn: Turn, event: dict) -> None:
        info = event.get("info") if isinstance(event.get("info"), dict) else {}
        total = _usage_total(info.get("total_token_usage"))
        last = _usage_total(info.get("last_token_usage"))
        if total is not None and self.total is not None and total >= self.total:
            spent = total - self.total  # 0 for a count written twice
        elif total is not None and self.total is None:
            spent = total
        else:  # no cumulative figure, or it went down (the count restarted)
            spent = last
        if total is not None:
            self.total = total
        if not spent:
            return
        mark = turn.extra.get("mark", 0)
        new = turn.builder.steps[mark:]
        turn.extra["mark"] = len(turn.builder.steps)
        if new:
            new[0].tokens = (new[0].tokens or 0) + spent
        else:  # a response that made no step yet (reasoning only): the next step's
            turn.extra["waiting_tokens"] = turn.extra.get("waiting_tokens", 0) + spent

    def _charge_waiting(self, turn: Turn, step) -> None:
        waiting = turn.extra.pop("waiting_tokens", 0)
        if waiting:
            step.tokens = (step.tokens or 0) + waiting

    def exit_code(self, turn: Turn, event: dict) -> None:
        """A command's exit code, judged at the end of the turn: by then the output that
        reported the exit (the call's own, or a later poll of the still running process)
        has been read, and an error is marked on one step only."""
        code = event.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            turn.extra.setdefault("exits", []).append(
                (text_of(event.get("call_id")), text_of(event.get("process_id")), code))

    def _judge_exits(self, turn: Turn) -> None:
        exits = turn.extra.pop("exits", [])
        if not exits:
            return
        by_id = {step.call_id: step for step in turn.builder.steps if step.call_id}
        reported = {text_of(step.args.get("session_id")) for step in turn.builder.steps
                    if step.tool == "write_stdin" and isinstance(step.args, dict)
                    and step.observation is not None and _exit_code(step.observation) is not None}
        for call_id, process, code in exits:
            step = by_id.get(call_id)
            if step is None or step.observation_error:
                continue
            if step.observation is not None and _exit_code(step.observation) is not None:
                continue  # its own output reported the exit, and was read as such
            if process and process in reported:
                continue  # a poll of the running process reported it
            self._mark_error(turn, call_id, f"exit code {code}", step)

    def _mark_error(self, turn: Turn, call_id: str, why: str, step=None) -> None:
        step = step or turn.chat.step_for(call_id)
        if step is None:
            return
        step.observation_error = True
        if step.observation is None:
            step.observation = why

    def _end_of_turn(self, turn: Turn) -> None:
        self._flush_text(turn)
        self._judge_exits(turn)
        last = turn.extra.get("last_message")
        steps = turn.builder.steps
        if last and not (steps and steps[-1].answer is not None) and turn.outcome is None:
            if steps and steps[-1].tool is None and steps[-1].thought.strip() == last.strip():
                steps[-1].answer, steps[-1].thought = steps[-1].thought, ""
            else:
                turn.answer = last
        waiting = turn.extra.pop("waiting_tokens", 0)
        if waiting and steps:
            steps[-1].tokens = (steps[-1].tokens or 0) + waiting


def _tool_name(namespace: Any, name: str) -> str:
    if not isinstance(namespace, str) or not namespace:
        return name
    return f"{namespace}{name}" if namespace.endswith("_") else f"{namespace}.{name}"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return text_of(content)
    parts = []
    for part in content:
        if isinstance(part, dict):
            parts.append(text_of(part["text"]) if "text" in part else f"[{text_of(part.get('type')) or 'part'}]")
        else:
            parts.append(text_of(part))
    return "\n".join(parts)


def _output(output: Any) -> tuple[str, bool]:
    """An output's text, and whether it reports a failure: a non-zero exit code in the
    text's header or in the metadata of a JSON output, or ``success: false``."""
    if isinstance(output, dict):  # older builds: {content, success}
        text = _content_text(output.get("content"))
        return text, output.get("success") is False or _failed(_exit_code(text))
    if isinstance(output, list):
        return _content_text(output), False
    text = text_of(output)
    if text.startswith("{") and '"metadata"' in text:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
            code = data["metadata"].get("exit_code")
            return text_of(data.get("output")), _failed(code if isinstance(code, int) else None)
    return text, _failed(_exit_code(text))


def _exit_code(text: str) -> int | None:
    head = "\n".join(text.split("\n", _HEADER_LINES)[:_HEADER_LINES])
    found = _EXIT.search(head)
    return int(found.group(1)) if found else None


def _failed(code: int | None) -> bool:
    return code is not None and not isinstance(code, bool) and code != 0


def _usage_total(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = token_count(usage.get("total_tokens"))
    if total is not None:
        return total
    counted = [n for n in (token_count(usage.get(k)) for k in ("input_tokens", "output_tokens")) if n is not None]
    return sum(counted) if counted else None
