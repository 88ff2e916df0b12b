"""Gemini CLI chat recordings: ``~/.gemini/tmp/<project>/chats/session-*.json`` (or ``.jsonl``).

The JSON file is ``{sessionId, projectHash, startTime, lastUpdated, messages}``; each
message has a ``type``: ``user`` (a prompt), ``gemini`` (the model's turn: ``thoughts``,
``content``, ``toolCalls`` each holding its own ``result`` and ``status``, ``tokens``),
``info``, ``warning`` or ``error`` (the CLI's notices). The JSON Lines recording is an
append-only log of the same: a metadata line, then messages written again in full each
time they change (the last write counts), ``{"$set": {...}}`` patches of the metadata and
``{"$rewindTo": id}`` (that message and every later one were undone). Each prompt starts
a run.
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
from agentdbg.importers.chat import Call
from agentdbg.importers.jsondata import is_json_lines, load_json, load_json_lines
from agentdbg.importers.sniffing import outline, wrong_root
from agentdbg.importers.turns import Session

NAME = "gemini-cli"
DESCRIPTION = "Gemini CLI chat recordings (session-*.json, or the .jsonl log)"

_MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")
_BOOTSTRAP = "<session_context>"  # a user message the CLI writes itself at the start


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    if shape.root == "[" and shape.has("*", "sessionId") and shape.has("*", "messageId"):
        return False, "a Gemini CLI prompt log (logs.json: the prompts only, no replies)"
    if shape.root != "{":
        return False, wrong_root(shape, "a chat recording's JSON object")
    if shape.has("sessionId") and shape.has("projectHash"):
        return True, "a chat recording: sessionId and projectHash"
    if "gemini" in shape.strings("messages", "*", "type") or (
            "gemini" in shape.strings("type") and shape.has("id")):
        return True, "messages of type 'gemini'"
    if shape.has("$rewindTo") or (shape.has("$set") and shape.has("sessionId")):
        return True, "a JSON Lines chat recording ($set, $rewindTo)"
    if shape.has("sessionId"):
        return False, "a 'sessionId' without a 'projectHash', and no messages of type 'gemini'"
    return False, "no 'sessionId' with a 'projectHash', and no messages of type 'gemini'"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    if is_json_lines(src.text):
        meta, messages, lines = _replay(src)
    else:
        value = load_json(src)
        if not isinstance(value, dict):
            src.problem(f"expected a chat recording (a JSON object), got a JSON {type(value).__name__}")
            value = {}
        meta = value
        messages = value.get("messages") if isinstance(value.get("messages"), list) else []
        lines = [None] * len(messages)
        if "messages" in value and not isinstance(value.get("messages"), list):
            src.problem("'messages' is not a list: nothing to import")
    session = Session(src, "gemini", text_of(meta.get("sessionId"))[:8])
    for message, line in zip(messages, lines, strict=True):
        _message(session, message, line)
    if not messages and isinstance(meta.get("sessionId"), str):
        session.next_turn()  # a session nothing was said in yet: one empty run
    result = ImportResult(problems=src.problems)
    result.runs = session.build()
    result.raw_count = sum(t.builder.raw_count for t in session.turns)
    if not messages:
        result.empty_run = "messages" in meta and isinstance(meta.get("sessionId"), str)
        result.unread = "no messages in it"
    elif not any(isinstance(m, dict) and m.get("type") in _MESSAGE_TYPES for m in messages):
        result.unread = "no message had a type of user, gemini, info, warning or error"
    return result


def _replay(src: Source) -> tuple[dict, list, list]:
    """The recording as it stands at its end: (metadata, messages, their lines)."""
    meta: dict = {}
    order: list[str] = []  # message ids in the order first written
    position: dict[str, int] = {}  # id -> its index in order
    latest: dict[str, tuple[dict, int]] = {}
    for record in load_json_lines(src):
        value, line = record.value, record.line
        if not isinstance(value, dict):
            src.problem(f"a JSON {type(value).__name__}, not a record of the recording; skipped", line)
            continue
        if "$rewindTo" in value:
            target = text_of(value["$rewindTo"])
            if target in latest:
                cut = position[target]
                for dropped in order[cut:]:
                    del latest[dropped], position[dropped]
                del order[cut:]
            else:
                src.problem(f"$rewindTo {target!r}: no message with that id; nothing undone", line)
        elif isinstance(value.get("$set"), dict):
            patch = value["$set"]
            if isinstance(patch.get("messages"), list):  # the list replaced (compression)
                order, position, latest = [], {}, {}
                for index, message in enumerate(patch["messages"]):
                    key = text_of(message.get("id")) if isinstance(message, dict) else ""
                    _upsert(order, position, latest, key or f"\x00{line}:{index}", message, line)
            meta.update({k: v for k, v in patch.items() if k != "messages"})
        elif "type" in value and ("id" in value or value.get("type") in _MESSAGE_TYPES):
            _upsert(order, position, latest, text_of(value.get("id")) or f"\x00{line}", value, line)
        elif "sessionId" in value:
            meta.update(value)
        else:
            _upsert(order, position, latest, f"\x00{line}", value, line)
    messages = [latest[key][0] for key in order]
    return meta, messages, [latest[key][1] for key in order]


def _upsert(order: list, position: dict, latest: dict, key: str, value: Any, line: int) -> None:
    """A message written again replaces the earlier write, in the place of the first."""
    if key not in latest:
        position[key] = len(order)
        order.append(key)
    latest[key] = (value, line)


def _message(session: Session, message: Any, line: int | None) -> None:
    if not isinstance(message, dict):
        session.raw(message, f"not a message (a JSON {type(message).__name__})", "record")
        return
    kind = message.get("type")
    if kind == "user":
        text = _content_text(message.get("content"))
        typed = _content_text(_text_parts(message.get("content")))  # parts of other kinds are no prompt
        if typed.strip() and not text.lstrip().startswith(_BOOTSTRAP):
            session.prompt(text)
        else:
            session.raw(message, f"user message: {preview(text)}", "user message")
    elif kind == "gemini":
        _gemini(session, message, line)
    elif kind == "error":
        turn = session.current
        turn.outcome, turn.message = "error", _content_text(message.get("content"))
        session.raw(message, preview(turn.message), "error", current=True)
    elif kind in ("info", "warning"):
        session.raw(message, preview(_content_text(message.get("content"))), kind, current=True)
    else:
        session.raw(message, f"a message of type {preview(text_of(kind))}", "message")


def _gemini(session: Session, message: dict, line: int | None) -> None:
    session.set_model(message.get("model"))
    turn = session.current
    thoughts = message.get("thoughts")
    reasoning = [_thought(t) for t in (thoughts if isinstance(thoughts, list) else [])]
    text = _content_text(message.get("content"))
    calls = message.get("toolCalls") if isinstance(message.get("toolCalls"), list) else []
    tokens = _tokens(message.get("tokens"))
    if not calls:
        turn.chat.assistant([text], [], tokens, line, reasoning=reasoning)
        return
    thought = "\n".join(t for t in [*reasoning, text] if t.strip())
    for index, record in enumerate(calls):
        if not isinstance(record, dict):
            session.raw(record, "a tool call that is not an object", "tool call", current=True)
            continue
        call_id = text_of(record.get("id"))
        call = Call(text_of(record.get("name")) or "?", record.get("args", {}), call_id)
        step = turn.chat.call(call, thought if index == 0 else "", tokens if index == 0 else None, line)
        output, error = _result(record)
        if output is None:
            continue  # no result recorded: the call is still waiting
        if call_id and turn.chat.waiting(call_id):
            turn.chat.reply(call_id, output, error=error, data=record, line=line)
        else:
            turn.chat.close(step)
            step.reply(output, error)


def _result(record: dict) -> tuple[str | None, bool]:
    """A tool call's output text and whether it failed: a status other than success, or
    an ``error`` in its function response."""
    status = record.get("status")
    failed = isinstance(status, str) and status != "success"
    parts = record.get("result")
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else ([parts] if parts is not None else []):
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) \
            and isinstance(part.get("functionResponse"), dict) else None
        if isinstance(response, dict):
            if "error" in response:
                failed = True
                texts.append(text_of(response["error"]))
            elif "output" in response:
                texts.append(text_of(response["output"]))
            else:
                texts.append(text_of(response))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part is not None:
            texts.append(text_of(part))
    if not texts and isinstance(record.get("resultDisplay"), str) and record["resultDisplay"].strip():
        texts.append(record["resultDisplay"])
    if not texts:
        return (f"[{status}]" if failed else None), failed
    return "\n".join(texts), failed


def _thought(thought: Any) -> str:
    if isinstance(thought, dict):
        subject = text_of(thought.get("subject")).strip()
        description = text_of(thought.get("description")).strip()
        return f"{subject}: {description}" if subject and description else subject or description
    return text_of(thought)


def _content_text(content: Any) -> str:
    """A message's content: a string, or the text of its parts (other parts by kind)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return text_of(content)
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict):
            texts.append(f"[{next(iter(part), 'part')}]")
    return "\n".join(texts)


def _text_parts(content: Any) -> Any:
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return [p for p in content if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))]
    return content


def _tokens(tokens: Any) -> int | None:
    if not isinstance(tokens, dict):
        return None
    total = token_count(tokens.get("total"))
    if total is not None:
        return total
    counted = [n for n in (token_count(tokens.get(k)) for k in ("input", "output", "thoughts", "tool")) if n is not None]
    return sum(counted) if counted else None
