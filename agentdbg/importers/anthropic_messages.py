"""Anthropic Messages: content blocks, tool_use matched to tool_result by id.

Accepted shapes: a JSON array of messages; an object with ``messages`` (and ``system``,
``tools``, ``model``, as in a request body); a JSON array of such objects; JSON Lines of
messages, or of ``{"type": ..., "message": {...}}`` entries as agent transcripts write
them (consecutive entries of one assistant message, same ``message.id``, are one turn).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentdbg.importers import claude_code
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
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import Call, ChatAssembler, convert_conversations
from agentdbg.importers.jsondata import is_json_lines, load_json, load_json_lines
from agentdbg.importers.openai_chat import (
    _BLOCK_TYPE_PATHS,
    _EMPTY_MESSAGES,
    ANTHROPIC_BLOCKS,
    unread_lists,
    what_was_found,
)
from agentdbg.importers.openai_responses import responses_marker
from agentdbg.importers.sniffing import outline

NAME = "anthropic-messages"
DESCRIPTION = "Anthropic Messages: JSON array, {messages, system, tools}, or a JSON Lines transcript"

_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    if responses_marker(shape):
        return False, f"{responses_marker(shape)}: OpenAI Responses"
    if shape.has("message", "role") and any(shape.has(key) for key in claude_code.SESSION_KEYS):
        keys = ", ".join(key for key in claude_code.SESSION_KEYS if shape.has(key))
        return False, f"entries with a 'message' beside Claude Code's session keys ({keys}): a session's layout"
    blocks = set().union(*(shape.strings(*p) for p in _BLOCK_TYPE_PATHS)) & ANTHROPIC_BLOCKS
    if blocks:
        return True, f"{', '.join(sorted(blocks))} content blocks"
    if shape.has("system") and shape.has("messages"):
        if not shape.has("messages", "*", "role") and not _EMPTY_MESSAGES.search(head):
            return False, "a top-level 'system' beside 'messages' that have no 'role'"
        return True, "a request body with a top-level system prompt"
    if shape.has("message", "role") and shape.strings("type") & {"user", "assistant"}:
        return True, "transcript entries of {type, message}"
    if "message" in shape.strings("type") and shape.has("content"):
        return True, "a Messages API response"
    return False, ("no tool_use, tool_result or thinking content blocks, no 'system' beside 'messages', "
                   "no Messages API response")


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    conversations = _conversations(src)
    unread = [key for c in conversations for key in c.pop("unread", ())]
    result = convert_conversations(src, conversations, _conversation_events)
    result.empty_run, result.unread = what_was_found(
        [m if m is not None else data for c in conversations for m, _, data in c["entries"]],
        bool(conversations), unread)
    return result


def _conversations(src: Source) -> list[dict]:
    if is_json_lines(src.text):
        records = load_json_lines(src)
        if records and all(isinstance(r.value, dict) and "messages" in r.value for r in records):
            out: list[dict] = []
            for record in records:
                out.extend(_from_value(src, record.value, record.line))
            return out
        entries = []
        for record in records:
            value = record.value
            if isinstance(value, dict) and isinstance(value.get("message"), dict):
                entries.append((value["message"], record.line, value))
            elif isinstance(value, dict) and "role" in value:
                entries.append((value, record.line, value))
            else:
                entries.append((None, record.line, value))
        return [{"entries": entries}]
    return _from_value(src, load_json(src), None)


def _from_value(src: Source, value: Any, line: int | None) -> list[dict]:
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            return [{"entries": [(m if isinstance(m, dict) else None, line, m) for m in value["messages"]],
                     "system": value.get("system"), "tools": value.get("tools"), "model": value.get("model"),
                     "unread": unread_lists(value, {"messages", "system", "tools"})}]
        if "role" in value:
            return [{"entries": [(value, line, value)], "model": value.get("model")}]
        src.problem("a JSON object without 'messages': nothing to import", line)
        return []
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "messages" in v for v in value):
            out: list[dict] = []
            for item in value:
                out.extend(_from_value(src, item, line))
            return out
        return [{"entries": [(m if isinstance(m, dict) else None, line, m) for m in value]}]
    src.problem(f"expected messages, got a JSON {type(value).__name__}", line)
    return []


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": "text", "text": text_of(b)} for b in content]
    if content is None:
        return []
    return [{"type": "text", "text": text_of(content)}]


def block_text(content: Any) -> str:
    """A tool result's or a system prompt's content as text (non-text blocks by type)."""
    parts = []
    for block in _blocks(content):
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(f"[{block.get('type', 'block')}]")
    return "\n".join(parts)


def _usage(message: dict) -> int | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counted = [n for n in (token_count(usage.get(k)) for k in keys) if n is not None]
    return sum(counted) if counted else None


def _merge_turns(entries: list) -> list:
    """Entries of one assistant message (same ``id``) become one turn, also when entries
    that are not messages (progress, summaries) lie between them."""
    merged: list = []
    last = -1  # the index in ``merged`` of the latest message
    for message, line, data in entries:
        previous = merged[last][0] if last >= 0 else None
        if (previous is not None and message is not None and message.get("role") == "assistant"
                and message.get("id") and previous.get("role") == "assistant"
                and previous.get("id") == message.get("id")):
            content = _blocks(previous.get("content")) + _blocks(message.get("content"))
            merged[last] = ({**previous, "content": content, "usage": message.get("usage") or previous.get("usage")},
                            merged[last][1], merged[last][2])
            continue
        merged.append((message, line, data))
        if message is not None:
            last = len(merged) - 1
    return merged


def _conversation_events(src: Source, entries: list, system: Any = None, tools: Any = None,
                         model: Any = None) -> tuple[list, int]:
    specs = [tool_spec(str(t.get("name")), text_of(t.get("description")), params_from_schema(t.get("input_schema")))
             for t in (tools if isinstance(tools, list) else []) if isinstance(t, dict) and t.get("name")]
    builder = RunBuilder(name=str(model) if model else "", source=src.path,
                         policy=f"recorded: {model}" if model else "recorded chat", tools=specs)
    chat = ChatAssembler(builder, src, "anthropic")
    if system:
        builder.raw("anthropic system prompt", system, f"system prompt: {preview(block_text(system))}")
    task_set = False
    for message, line, data in _merge_turns(entries):
        if message is None:
            note = f"entry of type {data.get('type')!r}" if isinstance(data, dict) else "not a message"
            builder.raw("anthropic transcript entry", data, note)
            continue
        if not builder.name and message.get("model"):
            builder.name = str(message["model"])
            builder.policy = f"recorded: {message['model']}"
        role = message.get("role")
        if role == "assistant":
            _assistant(chat, builder, message, line)
        elif role == "user":
            for block in _blocks(message.get("content")):
                kind = block.get("type")
                if kind == "tool_result" or (str(kind).endswith("_tool_result") and "tool_use_id" in block):
                    chat.reply(str(block.get("tool_use_id") or ""), block_text(block.get("content")),
                               error=block.get("is_error") is True, data=block, line=line)
                elif kind == "text" and not task_set:
                    builder.task, task_set = str(block.get("text", "")), True
                else:
                    note = f"user message: {preview(text_of(block.get('text')))}" if kind == "text" else f"user {kind} block"
                    builder.raw("anthropic user content", block, note)
        else:
            src.problem(f"a message with role {role!r}, which is neither user nor assistant; "
                        "kept as a raw record", line)
            builder.raw("anthropic message", data, f"role {role!r}")
    chat.finish()
    return builder.build(), builder.raw_count


def _assistant(chat: ChatAssembler, builder: RunBuilder, message: dict, line: int | None) -> None:
    tokens = _usage(message)
    texts: list[str] = []
    thinking: list[str] = []  # never part of a final answer
    made = []
    for block in _blocks(message.get("content")):
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "thinking":
            texts.append(str(block.get("thinking", "")))
            thinking.append(texts[-1])
        elif kind == "redacted_thinking":
            texts.append("[redacted thinking]")
            thinking.append(texts[-1])
        elif kind in _CALL_BLOCKS:
            call = Call(str(block.get("name") or "?"), block.get("input", {}), str(block.get("id") or ""))
            made.append(chat.call(call, "\n".join(t for t in texts if t.strip()),
                                  tokens if not made else None, line))
            texts, thinking = [], []
        else:
            builder.raw("anthropic assistant content", block, f"{kind} block", current=bool(made))
    if made:
        rest = "\n".join(t for t in texts if t.strip())
        if rest:  # text after the last call: part of that turn's reasoning
            made[-1].thought = (made[-1].thought + "\n" + rest).strip("\n")
    else:
        said = list(texts)
        for text in thinking:
            said.remove(text)
        chat.assistant(said, [], tokens, line, reasoning=thinking)
