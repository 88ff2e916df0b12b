"""OpenAI Chat Completions message lists.

Accepted shapes: a JSON array of messages; an object with ``messages`` (and ``tools``,
``model``, as in a request body); a JSON array of such objects or of message arrays; JSON
Lines with one conversation (array or object) per line, or one message per line (then the
whole file is one conversation). Each conversation is a run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentdbg.importers import exported
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
from agentdbg.importers.openai_responses import responses_marker
from agentdbg.importers.sniffing import outline
from agentdbg.importers.streaming import StreamReader

NAME = "openai-chat"
DESCRIPTION = "OpenAI Chat Completions messages: JSON array, {messages, tools}, or JSON Lines"

_ROLE_PATHS = (("*", "role"), ("messages", "*", "role"), ("*", "messages", "*", "role"),
               ("*", "*", "role"), ("role",))
ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}
_BLOCK_TYPE_PATHS = (("*", "content", "*", "type"), ("messages", "*", "content", "*", "type"),
                     ("content", "*", "type"), ("message", "content", "*", "type"),
                     ("*", "messages", "*", "content", "*", "type"))


_EMPTY_MESSAGES = re.compile(r'"messages"\s*:\s*\[\s*\]')
_READ_KEYS = {"messages", "tools", "functions"}


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    # What a refusal says is what was found (several formats look at the same keys).
    for key in ("trajectory", "history"):
        if shape.has(key):
            return False, f"has a top-level '{key}': an agent's run record, not a message list"
    if responses_marker(shape):
        return False, f"{responses_marker(shape)}: OpenAI Responses, not Chat Completions"
    for path in (("trajectory_format",), ("info", "mini_version"), ("info", "exit_status")):
        if shape.has(*path):
            return False, f"has '{'.'.join(path)}': a run record beside its messages, not a message list"
    if shape.has("system") and shape.has("messages"):
        return False, "has a top-level 'system' beside 'messages': the layout of an Anthropic Messages request"
    if shape.has("sessionId") and shape.has("projectHash"):
        return False, "has 'sessionId' and 'projectHash': a Gemini CLI chat's keys"
    if shape.has("steps"):
        return False, "has a top-level 'steps': an agent SDK's result, not a message list"
    if shape.has("*", "steps"):
        return False, "records that each have 'steps': an agent SDK's results, not message lists"
    if not any(shape.has(*p) for p in _ROLE_PATHS):
        if not shape.has("messages"):
            return False, "no list of messages with a 'role'"
        if not _EMPTY_MESSAGES.search(head):
            return False, "messages without a 'role'" + _typed(shape.strings("messages", "*", "type"))
    blocks = set().union(*(shape.strings(*p) for p in _BLOCK_TYPE_PATHS)) & ANTHROPIC_BLOCKS
    if blocks:
        return False, f"has {', '.join(sorted(blocks))} content blocks: Anthropic's, not OpenAI's"
    return True, "messages with roles"


def _typed(kinds: set) -> str:
    return f" (their 'type' is {', '.join(sorted(kinds)[:5])})" if kinds else ""


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    conversations = _conversations(src)
    unread = [key for c in conversations for key in c.pop("unread", ())]
    result = convert_conversations(src, conversations, conversation_events)
    result.empty_run, result.unread = what_was_found(
        [m for c in conversations for m in c["messages"]], bool(conversations), unread)
    return result


STREAMS = "JSON Lines of conversations and JSON arrays of conversations"


def convert_stream(reader: StreamReader, result: ImportResult) -> Iterator[tuple[list, int]] | None:
    """Conversations one at a time: JSON Lines, or an array of conversations (a first pass
    checks that every element is one: otherwise the array is one conversation, read whole)."""
    src = reader.src
    if reader.is_json_lines():
        return _stream_conversations(src, _line_conversations(src, reader.json_lines()), result)
    if not reader.opens_array():
        return None
    checked = 0
    for item in reader.array_items():
        if not _is_conversation(item):
            checked = 0
            break
        checked += 1
    reader.rewind()
    if not checked:
        return None
    items = (c for item in reader.array_items() for c in _from_value(src, item, None))
    return _stream_conversations(src, items, result)


def _is_conversation(item: Any) -> bool:
    return isinstance(item, (list, dict)) and (isinstance(item, list) or "messages" in item)


def _line_conversations(src: Source, records: Iterator) -> Iterator[dict]:
    """``_conversations`` of JSON Lines, a line at a time: lines that are all messages are
    one conversation (held until a line that is not a message says otherwise)."""
    held: list = []
    for record in records:
        if held is not None and isinstance(record.value, dict) and "role" in record.value:
            held.append(record)
            continue
        for earlier in held or ():
            yield from _from_value(src, earlier.value, earlier.line)
        held = None
        yield from _from_value(src, record.value, record.line)
    if held:
        yield {"messages": [r.value for r in held], "line": held[0].line, "lines": [r.line for r in held]}


def _stream_conversations(src: Source, conversations: Iterator[dict], result: ImportResult) -> Iterator[tuple[list, int]]:
    found, count, roleless, unread = False, 0, 0, []
    for conversation in conversations:
        found = True
        unread.extend(conversation.pop("unread", ()))
        count += len(conversation["messages"])
        roleless += sum(1 for m in conversation["messages"] if not _has_role(m))
        yield conversation_events(src, **conversation)
    result.empty_run, result.unread = found_verdict(count, roleless, found, unread)


def what_was_found(messages: list, found: bool, unread: list[str]) -> tuple[bool, str]:
    """(whether a result with no step is an empty conversation, else what was missing):
    every message must have a role, and nothing beside them is a list of records."""
    return found_verdict(len(messages), sum(1 for m in messages if not _has_role(m)), found, unread)


def _has_role(message: Any) -> bool:
    return isinstance(message, dict) and isinstance(message.get("role"), str) and bool(message["role"].strip())


def found_verdict(count: int, roleless: int, found: bool, unread: list[str]) -> tuple[bool, str]:
    """``what_was_found`` from counts: ``count`` messages, ``roleless`` of them without a role."""
    if not found:
        return False, "no conversation in it"
    if count and roleless == count:
        return False, "no message had a role"
    if roleless:
        return False, f"{roleless} of {count} messages had no role"
    if unread:
        held = ", ".join(repr(k) for k in dict.fromkeys(unread))
        return False, f"{held} beside 'messages' {'holds' if len(set(unread)) == 1 else 'hold'} records it does not read"
    return True, ""


def unread_lists(value: dict, read: set) -> list[str]:
    """Keys of ``value`` beside those read that hold lists of objects (records, not settings)."""
    return [str(k) for k, v in value.items()
            if k not in read and isinstance(v, list) and any(isinstance(i, dict) for i in v)]


def _conversations(src: Source) -> list[dict]:
    """Each conversation as {messages, tools, model, line, number}."""
    found: list[dict] = []
    if is_json_lines(src.text):
        records = load_json_lines(src)
        if records and all(isinstance(r.value, dict) and "role" in r.value for r in records):
            return [{"messages": [r.value for r in records], "line": records[0].line,
                     "lines": [r.line for r in records]}]
        for record in records:
            found.extend(_from_value(src, record.value, record.line))
        return found
    return _from_value(src, load_json(src), None)


def _from_value(src: Source, value: Any, line: int | None) -> list[dict]:
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            conversation = {"messages": value["messages"], "tools": value.get("tools") or value.get("functions"),
                            "model": value.get("model"), "line": line, "unread": unread_lists(value, _READ_KEYS)}
            if "agentdbg" in value:  # what agentdbg's export keeps beside the messages
                conversation["agentdbg"] = value["agentdbg"]
            return [conversation]
        if "role" in value:
            return [{"messages": [value], "line": line}]
        src.problem("a JSON object without 'messages': nothing to import", line)
        return []
    if isinstance(value, list):
        if value and all(isinstance(v, (list, dict)) and (isinstance(v, list) or "messages" in v)
                         for v in value):
            out: list[dict] = []
            for item in value:
                out.extend(_from_value(src, item, line))
            return out
        return [{"messages": value, "line": line}]
    src.problem(f"expected messages, got a JSON {type(value).__name__}", line)
    return []


def tools_from_definitions(definitions: Any) -> list[dict]:
    """``tools`` ({type: function, function: {...}}) or legacy ``functions`` -> tool specs."""
    specs: list[dict] = []
    if not isinstance(definitions, list):
        return specs
    for item in definitions:
        if not isinstance(item, dict):
            continue
        fn = item.get("function") if isinstance(item.get("function"), dict) else item
        name = fn.get("name")
        if isinstance(name, str) and name:
            specs.append(tool_spec(name, text_of(fn.get("description")),
                                   params_from_schema(fn.get("parameters"))))
    return specs


def content_text(content: Any) -> str:
    """Message content as text: a string, or the text of its parts (other parts by type)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif isinstance(part.get("refusal"), str):
                    parts.append(part["refusal"])
                else:
                    parts.append(f"[{part.get('type', 'part')}]")
        return "\n".join(parts)
    return text_of(content)


def _usage(message: dict) -> int | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    total = token_count(usage.get("total_tokens"))
    if total is not None:
        return total
    counted = [n for n in (token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens")) if n is not None]
    return sum(counted) if counted else None


def _calls(message: dict) -> list[Call]:
    calls: list[Call] = []
    made = message.get("tool_calls")
    for item in made if isinstance(made, list) else []:
        if not isinstance(item, dict):
            continue
        fn = item.get("function") if isinstance(item.get("function"), dict) else {}
        calls.append(Call(str(fn.get("name") or item.get("name") or "?"),
                          fn.get("arguments", item.get("arguments")), str(item.get("id") or "")))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        calls.append(Call(str(legacy.get("name") or "?"), legacy.get("arguments")))
    return calls


def conversation_events(src: Source, messages: list, tools: Any = None, model: Any = None,
                        line: int | None = None, lines: list[int] | None = None,
                        name: str = "", policy: str = "", kind: str = "openai",
                        task: str | None = None, agentdbg: Any = None) -> tuple[list, int]:
    """One conversation's events and how many records were kept raw. ``task``, when
    given, stands for the first user message (which is then not kept)."""
    builder = RunBuilder(name=name or (str(model) if model else ""), source=src.path,
                         policy=policy or (f"recorded: {model}" if model else "recorded chat"),
                         tools=tools_from_definitions(tools))
    restored = exported.ChatFacts(agentdbg, src, line)
    restored.start(builder)
    chat = ChatAssembler(builder, src, kind)
    task_set = False
    for index, message in enumerate(messages):
        where = lines[index] if lines and index < len(lines) else line
        if not isinstance(message, dict):
            src.problem(f"message {index + 1} is not an object; kept as a raw record", where)
            builder.raw(f"{kind} message", message, f"message {index + 1} is not an object")
            continue
        role = message.get("role")
        text = content_text(message.get("content"))
        if role == "assistant":
            texts = [text_of(message.get(k)) for k in ("reasoning_content", "reasoning")
                     if isinstance(message.get(k), str)]
            texts.append(text)
            if isinstance(message.get("refusal"), str):
                texts.append(message["refusal"])
            chat.assistant(texts, _calls(message), _usage(message), where)
        elif role == "tool":
            ids = message.get("tool_call_ids")
            ids = [str(i) for i in ids] if isinstance(ids, list) and ids else [str(message.get("tool_call_id") or "")]
            for call_id in ids:
                chat.reply(call_id, text, data=message, line=where)
        elif role == "function":
            chat.reply("", text, name=str(message.get("name") or ""), data=message, line=where)
        elif role == "user" and restored.fed_back(index):
            continue  # kept with its step by restored.finish
        elif role == "user" and not task_set:
            builder.task, task_set = (text if task is None else task), True
        elif role in ("system", "developer", "user"):
            builder.raw(f"{kind} {role} message", message, f"{role} message: {preview(text)}")
        else:
            src.problem(f"message {index + 1} has role {role!r}, which is not a chat role; "
                        "kept as a raw record", where)
            builder.raw(f"{kind} message", message, f"unknown role {role!r}")
    chat.finish()
    return builder.build(**restored.finish(builder)), builder.raw_count
