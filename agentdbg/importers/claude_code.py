"""Claude Code sessions: ``~/.claude/projects/<project>/<session>.jsonl``.

JSON Lines of entries with a ``type`` (user, assistant, system, summary, progress,
file-history-snapshot, ...) and Claude Code's envelope (``sessionId``, ``uuid``,
``parentUuid``, ``isSidechain``, ...). Claude Code writes each content block of one API
message as its own line, all with the same ``message.id``, and other entries can fall
between them: the lines of one id are one model turn, wherever they are, and its usage is
counted once (from the line with the final output count). Each prompt the user typed
starts a run; a sub-agent's sidechain is a run of its own.
"""

from __future__ import annotations

import json
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
from agentdbg.importers.turns import Session

NAME = "claude-code"
DESCRIPTION = "Claude Code session transcripts (JSON Lines of user, assistant, system, ... entries)"

# Keys of Claude Code's entry envelope that a plain Messages transcript does not have.
SESSION_KEYS = ("sessionId", "isSidechain", "userType", "agentId")
_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
# User text that Claude Code itself injects (slash commands, their output, reminders).
_INJECTED = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
             "<local-command-stderr>", "<system-reminder>", "<user-prompt-submit-hook>",
             "<bash-input>", "<bash-stdout>", "<bash-stderr>", "Caveat:")
_INTERRUPTED = "[Request interrupted by user"
_SYNTHETIC = "<synthetic>"  # the model name of messages Claude Code writes itself


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if shape.root != "{":
        return False, wrong_root(shape, "JSON Lines of entries")
    if not shape.has("message", "role"):
        return False, "no entries with a 'message.role'"
    if not shape.strings("type") & {"user", "assistant"}:
        kinds = sorted(shape.strings("type"))[:4]
        found = f" (their type: {', '.join(kinds)})" if kinds else " (no 'type')"
        return False, f"entries with a 'message', but none of type user or assistant{found}"
    if not any(shape.has(key) for key in SESSION_KEYS):
        return False, "user/assistant entries, but no Claude Code session keys (sessionId, isSidechain, userType, agentId)"
    return True, "user/assistant entries with Claude Code's session keys"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    records = load_json_lines(src)
    reader = _Reader(src)
    keys = [reader.thread_key(r.value) for r in records]
    messages = _whole_messages(records, keys)
    for record, key in zip(records, keys, strict=True):
        reader.entry(record.value, key, record.line, messages)
    result = ImportResult(problems=src.problems)
    for session in reader.sessions():
        result.runs.extend(session.build())
        result.raw_count += sum(t.builder.raw_count for t in session.turns)
    if not records:
        result.unread = "no entries in it"
    elif not any(t.started for session in reader.sessions() for t in session.turns):
        result.unread = "no prompt and no assistant message in it"
    return result


def _message_id(entry: Any) -> str:
    if isinstance(entry, dict) and entry.get("type") == "assistant" and isinstance(entry.get("message"), dict):
        message_id = entry["message"].get("id")
        if isinstance(message_id, str) and message_id:
            return message_id
    return ""


def _whole_messages(records: list, keys: list[str]) -> dict[tuple[str, str], dict]:
    """Each assistant message id's lines as one message: its blocks in order (a block
    written twice counted once), the usage of the line with the most output tokens (the
    count grows line by line), and the line it starts on."""
    whole: dict[tuple[str, str], dict] = {}
    for record, key in zip(records, keys, strict=True):
        message_id = _message_id(record.value)
        if not message_id:
            continue
        message = record.value["message"]
        found = whole.setdefault((key, message_id), {"content": [], "seen": set(), "usage": None,
                                                     "line": record.line})
        for block in _blocks(message.get("content")):
            seen = json.dumps(block, sort_keys=True, default=str)
            if seen not in found["seen"]:
                found["seen"].add(seen)
                found["content"].append(block)
        if _output_tokens(message.get("usage")) >= _output_tokens(found["usage"]):
            found["usage"] = message.get("usage")
    return whole


class _Reader:
    def __init__(self, src: Source):
        self.src = src
        self.threads: dict[str, Session] = {}  # "" is the main conversation; others are sidechains
        self.session_id = ""
        self.sidechain_roots: dict[str, str] = {}  # uuid -> the first uuid of its sidechain

    def sessions(self) -> list[Session]:
        """The main conversation's runs first, then each sidechain's."""
        return sorted(self.threads.values(), key=lambda s: s is not self.threads.get(""))

    def thread_key(self, entry: Any) -> str:
        """Which conversation an entry belongs to: "" for the main one."""
        if not isinstance(entry, dict) or entry.get("isSidechain") is not True:
            return ""
        agent = entry.get("agentId")
        if isinstance(agent, str) and agent:
            return f"sub-agent {agent}"
        uuid, parent = text_of(entry.get("uuid")), text_of(entry.get("parentUuid"))
        root = self.sidechain_roots.get(parent, uuid or parent)  # older files: told apart by their first entry
        if uuid:
            self.sidechain_roots[uuid] = root
        return f"sidechain {root[:8]}"

    def thread(self, key: str, entry: Any) -> Session:
        if not self.session_id and isinstance(entry, dict) and isinstance(entry.get("sessionId"), str):
            self.session_id = entry["sessionId"]
            for other_key, other in self.threads.items():
                other.name = _name(self.session_id, other_key)
        if key not in self.threads:
            self.threads[key] = Session(self.src, "claude-code", _name(self.session_id, key))
        return self.threads[key]

    def entry(self, entry: Any, key: str, line: int, messages: dict) -> None:
        session = self.thread(key, entry)
        if not isinstance(entry, dict):
            session.raw(entry, f"line {line}: not an entry (a JSON {type(entry).__name__})", "entry")
            return
        kind = entry.get("type")
        message = entry.get("message")
        message_id = _message_id(entry)
        if message_id:
            whole = messages[(key, message_id)]
            if whole["line"] == line:  # its later lines were read with it
                self.assistant(session, entry, whole["content"], whole["usage"], line)
        elif kind == "assistant" and isinstance(message, dict):
            self.assistant(session, entry, _blocks(message.get("content")), message.get("usage"), line)
        elif kind == "user" and isinstance(message, dict):
            self.user(session, entry, message, line)
        else:
            session.raw(entry, _note(entry), "entry")

    def assistant(self, session: Session, entry: dict, blocks: list[dict], usage: Any, line: int) -> None:
        model = entry["message"].get("model")
        if model == _SYNTHETIC:
            session.raw(entry, f"Claude Code's own message: {preview(_text(blocks))}", "entry")
            if entry.get("isApiErrorMessage") is True:
                session.current.outcome, session.current.message = "error", _text(blocks)
            return
        session.set_model(model)
        turn = session.current
        if turn.outcome == "error":  # the model answered after an API error: it was retried
            turn.outcome, turn.message = None, ""
        reasoning: list[str] = []
        texts: list[str] = []
        made: list = []
        tokens = _usage(usage)
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                texts.append(text_of(block.get("text")))
            elif kind == "thinking":
                reasoning.append(text_of(block.get("thinking")))
            elif kind == "redacted_thinking":
                reasoning.append("[redacted thinking]")
            elif kind in _CALL_BLOCKS:
                thought = "\n".join(t for t in reasoning + texts if t.strip())
                call = Call(text_of(block.get("name")) or "?", block.get("input", {}), text_of(block.get("id")))
                made.append(turn.chat.call(call, thought, None if made else tokens, line))
                reasoning, texts = [], []
            else:
                turn.builder.raw("claude-code assistant content", block, f"{kind} block", current=bool(made))
        rest = [t for t in reasoning + texts if t.strip()]
        if made and rest:  # text after the last call: part of that turn's reasoning
            made[-1].thought = "\n".join([made[-1].thought, *rest]).strip("\n")
        elif not made:
            turn.chat.assistant(texts, [], tokens, line, reasoning=reasoning)

    # -- user: a prompt, tool results, or text Claude Code injected ---------------------

    def user(self, session: Session, entry: dict, message: dict, line: int) -> None:
        content = message.get("content")
        if entry.get("isMeta") is True or entry.get("isCompactSummary") is True:
            what = "a compacted history's summary" if entry.get("isCompactSummary") is True else "meta"
            session.raw(entry, f"{what}: {preview(_text(_blocks(content)))}", "user entry")
            return
        prompt: list[str] = []
        for block in _blocks(content):
            kind = block.get("type")
            if kind == "tool_result":
                session.current.chat.reply(text_of(block.get("tool_use_id")), _text(_blocks(block.get("content"))),
                                           error=block.get("is_error") is True, data=block, line=line)
            elif kind == "text":
                text = text_of(block.get("text"))
                if text.startswith(_INTERRUPTED):
                    session.current.outcome, session.current.message = "interrupted", text
                    session.raw(block, text, "user text")
                elif text.lstrip().startswith(_INJECTED):
                    session.raw(block, f"injected text: {preview(text)}", "user text")
                elif text.strip():
                    prompt.append(text)
            else:
                session.raw(block, f"user {kind} block", "user content")
        if prompt:
            session.prompt("\n".join(prompt))


def _name(session_id: str, key: str) -> str:
    return " ".join(part for part in (session_id[:8], key) if part)


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": "text", "text": text_of(b)} for b in content]
    if content is None:
        return []
    return [{"type": "text", "text": text_of(content)}]


def _text(blocks: list[dict]) -> str:
    """Blocks as text: text blocks as they are, others by their type."""
    return "\n".join(text_of(b["text"]) if "text" in b else f"[{text_of(b.get('type')) or 'block'}]"
                     for b in blocks)


def _output_tokens(usage: Any) -> int:
    return (token_count(usage.get("output_tokens")) or 0) if isinstance(usage, dict) else -1


def _usage(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counted = [n for n in (token_count(usage.get(k)) for k in keys) if n is not None]
    return sum(counted) if counted else None


def _note(entry: dict) -> str:
    kind = entry.get("type")
    if kind == "summary":
        return f"session title: {preview(text_of(entry.get('summary')))}"
    if kind == "system":
        return f"system {preview(text_of(entry.get('subtype'))) or 'entry'}: {preview(text_of(entry.get('content')))}".rstrip(": ")
    if kind == "progress" and isinstance(entry.get("data"), dict):
        return f"progress: {preview(text_of(entry['data'].get('type')))}"
    if isinstance(kind, str):
        return preview(kind)
    return "an entry without a type"
