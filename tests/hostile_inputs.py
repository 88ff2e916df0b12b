"""Hostile text in every field of every format agentdbg reads (helpers, no tests).

``write_input(kind, folder)`` writes one file of ``kind`` (an agentdbg trace with every
event type, a plan, or a run in each importer's format) whose every text field holds
``HOSTILE``: terminal control sequences, markup, bidi overrides, zero-width and tag
characters, and lone surrogates (where the format can carry them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# What a terminal obeys: OSC 52 writes the clipboard, OSC 2 the window title, OSC 8 makes a
# link; erase, cursor moves, colours, hidden cursor, full reset; the same as C1 controls;
# bell, backspace, NUL, DEL, carriage return.
SEQUENCES = ("\x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;PWNED\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"
             "\x1b[2J\x1b[H\x1b[31mRED\x1b[0m\x1b[?25l\x1b7\x1bc"
             "\x9b2J\x9d0;title\x9c\x90q\x9c"
             "\x07\x08\x00\x7f\rover")
# What draws nothing but changes what is seen: a right-to-left override, isolates, marks,
# zero-width space, word joiner, BOM, a joiner between ASCII letters, hidden tag text, a
# Hangul filler.
INVISIBLE = ("\u202eevil\u202c \u2066iso\u2069 \u200e\u200f\u061c z\u200bw\u2060j\ufeffb "
             "c\u200dalc t\U000e0041\U000e0042 \u3164.")
BIDI_OVERRIDE = "\u202e"
MARKUP = "[red]m[/red] [link=https://evil.example]l[/link] :smile:"
SURROGATES = "\ud800 \udfff"
HOSTILE = f"<<{MARKUP} {SEQUENCES} {INVISIBLE} {SURROGATES}>>"
# For text formats: one line (no line breaks) and no surrogates (a UTF-8 file cannot hold
# them; LONE_SURROGATE_BYTES are what a careless encoder writes for one).
HOSTILE_LINE = f"<<{MARKUP} {SEQUENCES.replace(chr(13), '')} {INVISIBLE}>>"
LONE_SURROGATE_BYTES = b"\xed\xa0\x80"
# What sanitize shows wherever it stands (tag characters: any from E0000).
SHOWN = "\u202e\u202c\u2066\u2069\u200e\u200f\u061c\u200b\u2060\ufeff\u3164"
NEVER_ON_A_TERMINAL = re.compile(f"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f{SHOWN}\U000e0000-\U000e0fff]")

FORMATS = ("trace", "plan", "react-paper", "transcript", "swe-agent", "openai-chat", "anthropic-messages", "otel-genai")
# Formats that carry any string exactly, lone surrogates included (JSON).
EXACT = {"trace", "swe-agent", "openai-chat", "anthropic-messages", "otel-genai"}


def write_input(kind: str, folder: Path) -> Path:
    return WRITERS[kind](folder)


def _jsonl(path: Path, records: list) -> Path:
    # ensure_ascii: every lone surrogate written as its \ud800 escape, as a JSON tool would
    path.write_text("".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records), encoding="ascii")
    return path


def trace_events(text: str = HOSTILE) -> list[dict]:
    """One run with every event type (text fields, tool names, error kinds, guard names,
    outcome, raw records), and a second run, so that totals are printed too."""
    state = {"v": 1, "step": 1, "steps": [1, 5], "repeats": [1, 2], "errors": [1, 3], "tokens": [10, 500],
             "step_tokens": 10, "tool_calls": {text: [1, 1]}, "error_count": 1, "parse_errors": 0,
             "repeat_count": 0, "trips": [], "raw_count": 0,
             "memory": {"buffer": [text], "summary": text, "semantic_size": 1, "recalled": [{"text": text, "score": 0.5}],
                        "added": [text], "evicted": [], "stored": [text], "summary_changed": True},
             "answer": None, "outcome": None}
    first = [
        {"type": "run_start", "step": 0, "task": text, "task_label": text, "policy": text, "name": text, "source": text,
         "tools": [{"name": text, "description": text, "params": {text: text}, "dangerous": True}],
         "guards": {"max_steps": 5, "repeat": {"mode": text, "threshold": 2}, "max_consecutive_errors": 3,
                    "token_budget": 500, "token_estimator": text},
         "memory": {"kind": text, "max_turns": 2}},
        {"type": "step", "step": 1},
        {"type": "memory_recall", "step": 1, "query": text, "results": [{"text": text, "score": 0.5}]},
        {"type": "thought", "step": 1, "text": text},
        {"type": "action", "step": 1, "tool": text, "args": {text: text}, "call": text, "id": text},
        {"type": "approval", "step": 1, "tool": text, "decision": "edited", "by": text, "reason": text,
         "args": {text: text}},
        {"type": "operation", "step": 1, "key": text, "tool": text},
        {"type": "error", "step": 1, "kind": text, "message": "error " + text, "tool": text},
        {"type": "observation", "step": 1, "text": text, "error": True, "id": text},
        {"type": "memory_update", "step": 1, "added": [text], "evicted": [text], "summary": text, "stored": [text]},
        {"type": "guards", "step": 1, "steps": [1, 5], "repeats": [1, 2], "errors": [1, 3], "tokens": [10, 500],
         "step_tokens": 10},
        {"type": "checkpoint", "step": 1, "state": state},
        {"type": "step", "step": 2},
        {"type": "thought", "step": 2, "text": text},
        {"type": "parse_error", "step": 2, "message": text, "text": text},
        {"type": "raw", "step": 2, "source": text, "data": {text: [text]}, "note": text},
        {"type": text, "step": 2, text: text},  # an event type this version does not know
        {"type": "observation", "step": 2, "text": text, "error": True},
        {"type": "guards", "step": 2, "steps": [2, 5], "repeats": [1, 2], "errors": [2, 3], "tokens": [20, 500]},
        {"type": "step", "step": 3},
        {"type": "action", "step": 3, "tool": text, "args": text, "call": text},
        {"type": "observation", "step": 3, "text": text, "key": text, "replayed": {"run": 1, "step": 1}},
        {"type": "final_answer", "step": 3, "answer": text},
        {"type": "guards", "step": 3, "steps": [3, 5], "repeats": [2, 2], "errors": [0, 3], "tokens": [30, 500]},
        {"type": "guard_tripped", "step": 3, "guard": text, "message": text},
        {"type": "run_end", "step": 3, "outcome": text, "answer": text, "steps": 3, "guard": text, "message": text},
    ]
    second = [
        {"type": "run_start", "step": 0, "task": text},
        {"type": "step", "step": 1},
        {"type": "thought", "step": 1, "text": text},
        {"type": "run_end", "step": 1, "outcome": text, "steps": 1, "message": text},
    ]
    return first + second


def _trace(folder: Path) -> Path:
    header = {"type": "header", "format": "agentdbg-trace", "version": 1, "created_by": HOSTILE}
    path = _jsonl(folder / "hostile.jsonl", [header, *trace_events()])
    with open(path, "ab") as out:  # damaged lines: their problems quote them on stderr
        out.write(b'{"type": "thought", "step": 1, "text": 5, "note": "' + HOSTILE.encode("utf-8", "surrogatepass")
                  + b'"}\n' + HOSTILE_LINE.encode() + LONE_SURROGATE_BYTES + b"\n")
    return path


def _toml(text: str) -> str:
    """A TOML basic string holding ``text`` (without surrogates: TOML cannot hold them)."""
    return '"' + "".join(c if " " <= c <= "~" and c not in '"\\' else
                         f"\\u{ord(c):04X}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08X}" for c in text) + '"'


def _plan(folder: Path) -> Path:
    text = _toml(HOSTILE.replace(SURROGATES, ""))
    path = folder / "hostile.toml"
    path.write_text(f"""\
name = {text}
description = {text}
task = {text}
task_label = {text}

[guards]
max_steps = 6
repeat = "any"

[[tools]]
name = "echo"
kind = "scripted"
description = {text}
responses = [{{ return = {text} }}, {{ raise = {text} }}]

[[tools]]
name = "lookup"
kind = "table"
description = {text}
rows = {{ {text} = {text} }}

[memory]
max_turns = 1
summary = "extractive"
recall_k = 1

[policy]
kind = "script"

[[policy.steps]]
thought = {text}
action = {text}
args = {{ {text} = {text} }}

[[policy.steps]]
thought = {text}
action = "echo"
args = {{ x = {text} }}

[[policy.steps]]
thought = {text}
action = "echo"
args = {{ x = {text} }}

[[policy.steps]]
thought = {text}
action = "lookup"
args = {{ key = {text} }}

[[policy.steps]]
kind = "finish"
content = {text}
""", encoding="utf-8")
    return path


def _text_file(path: Path, lines: list[str]) -> Path:
    # Raw control bytes, and a lone surrogate as a careless encoder writes it (invalid UTF-8).
    data = "\n".join(lines).encode("utf-8") + b"\n"
    path.write_bytes(data.replace(b"@SURROGATE@", LONE_SURROGATE_BYTES))
    return path


def _react_paper(folder: Path) -> Path:
    h = HOSTILE_LINE + "@SURROGATE@"
    return _text_file(folder / "hostile_react.txt", [
        f"9 Claim: {h}",
        f"Thought 1: {h}",
        f"Action 1: Search[{h}]",
        f"Observation 1: {h}",
        f"Thought 2: {h}",
        f"Action 2: {h}",
        f"Observation 2: Invalid action: {h}",
        f"Thought 3: {h}",
        f"Action 3: Finish[{h}]",
        "Observation 3: Episode finished, reward = 0",
        "",
        f"{{'steps': 3, 'answer': '{h}', 'gt_answer': '{h}', 'question_idx': 9, 'em': 0, 'reward': 0, 'f1': 0}}",
        "",
    ])


def _transcript(folder: Path) -> Path:
    h = HOSTILE_LINE + "@SURROGATE@"
    return _text_file(folder / "hostile_transcript.txt", [
        f"Question: {h}",
        f"Thought: {h}",
        f"Action: catalog[{h}]",
        f"Observation: ERROR {h}",
        f"Thought: {h}",
        f"Action: {h}",
        f"Observation: {h}",
        f"Final Answer: {h}",
    ])


def _swe_agent(folder: Path) -> Path:
    h = HOSTILE
    docs = f"{h}:\n  docstring: {h}\n  signature: {h}\n  arguments:\n    - {h} (string) [required]: {h}\n"
    data = {
        "environment": h,
        "trajectory": [
            {"action": f"{h} {h}", "observation": h, "thought": h, "response": h, "state": {}},
            {"action": "", "observation": h, "thought": h, "response": h},
            {"action": "submit", "observation": h, "thought": h, "response": h},
        ],
        "history": [{"role": "user", "content": h}, {"role": "assistant", "content": h, "action": f"{h} {h}",
                                                      "tool_calls": [{"id": h, "function": {"name": h, "arguments": json.dumps({h: h})}}]}],
        "info": {"exit_status": h, "submission": h,
                 "model_stats": {"tokens_sent": 10, "tokens_received": 5, "instance_cost": 0.5, "api_calls": 2}},
        "replay_config": json.dumps({"agent": {"model": {"name": h}, "tools": {"command_docs": docs}},
                                     "problem_statement": {"id": h, "text": h}}),
    }
    return _jsonl(folder / "hostile.traj", [data])


def _openai_chat(folder: Path) -> Path:
    h = HOSTILE
    data = {
        "model": h,
        "tools": [{"type": "function", "function": {"name": h, "description": h,
                                                     "parameters": {"type": "object", "properties": {h: {"type": h}}}}}],
        "messages": [
            {"role": "system", "content": h},
            {"role": "user", "content": h},
            {"role": "assistant", "content": h, "tool_calls": [
                {"id": h, "type": "function", "function": {"name": h, "arguments": json.dumps({h: h})}},
                {"id": h + "2", "type": "function", "function": {"name": h, "arguments": h}}]},
            {"role": "tool", "tool_call_id": h, "content": h},
            {"role": "tool", "tool_call_id": h + "2", "content": h},
            {"role": "tool", "tool_call_id": h + "none", "content": h},  # matches no call: a warning
            {"role": h, "content": h},
            {"role": "assistant", "content": h, "usage": {"total_tokens": 7}},
        ],
    }
    return _jsonl(folder / "hostile_chat.json", [data])


def _anthropic_messages(folder: Path) -> Path:
    h = HOSTILE
    data = {
        "model": h,
        "system": h,
        "tools": [{"name": h, "description": h, "input_schema": {"type": "object", "properties": {h: {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": h},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": h, "signature": h},
                {"type": "text", "text": h},
                {"type": "tool_use", "id": h, "name": h, "input": {h: h}},
                {"type": "tool_use", "id": h + "2", "name": h, "input": h}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": h, "content": [{"type": "text", "text": h}, {"type": h}]},
                {"type": "tool_result", "tool_use_id": h + "2", "content": h, "is_error": True},
                {"type": "tool_result", "tool_use_id": h + "none", "content": h}]},
            {"role": "assistant", "content": [{"type": "text", "text": h}]},
        ],
    }
    return _jsonl(folder / "hostile_messages.json", [data])


def _attribute(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _otel_genai(folder: Path) -> Path:
    h = HOSTILE
    messages_in = json.dumps([{"role": "user", "parts": [{"type": "text", "content": h}]}])
    messages_out = json.dumps([{"role": "assistant", "parts": [
        {"type": "text", "content": h}, {"type": "reasoning", "content": h},
        {"type": "tool_call", "id": h, "name": h, "arguments": {h: h}}]}])
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": h}]}])
    tools = json.dumps([{"type": "function", "name": h, "description": h, "parameters": {"properties": {h: {"type": h}}}}])
    spans = [
        {"traceId": "t1", "spanId": "a", "name": h, "startTimeUnixNano": "1", "status": {"code": 2, "message": h},
         "attributes": [_attribute("gen_ai.operation.name", "invoke_agent"), _attribute("gen_ai.agent.name", h),
                        _attribute("gen_ai.input.messages", messages_in), _attribute("gen_ai.output.messages", answer),
                        _attribute("error.type", h)]},
        {"traceId": "t1", "spanId": "b", "parentSpanId": "a", "name": h, "startTimeUnixNano": "2",
         "attributes": [_attribute("gen_ai.operation.name", "chat"), _attribute("gen_ai.request.model", h),
                        _attribute("gen_ai.tool.definitions", tools), _attribute("gen_ai.output.messages", messages_out)]},
        {"traceId": "t1", "spanId": "c", "parentSpanId": "a", "name": h, "startTimeUnixNano": "3",
         "attributes": [_attribute("gen_ai.operation.name", "execute_tool"), _attribute("gen_ai.tool.name", h),
                        _attribute("gen_ai.tool.call.id", h), _attribute("gen_ai.tool.call.result", h),
                        _attribute("gen_ai.tool.description", h), _attribute("error.type", h)]},
        {"traceId": "t1", "spanId": "d", "parentSpanId": "a", "name": h, "startTimeUnixNano": "4",
         "attributes": [_attribute("gen_ai.operation.name", "execute_tool"), _attribute("gen_ai.tool.name", h),
                        _attribute("gen_ai.tool.call.arguments", h), _attribute("gen_ai.tool.call.result", h)]},
        {"traceId": "t1", "spanId": "e", "parentSpanId": "a", "name": h, "startTimeUnixNano": "5",
         "attributes": [_attribute(h, h)]},
    ]
    return _jsonl(folder / "hostile_otel.json", [{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}])


WRITERS = {"trace": _trace, "plan": _plan, "react-paper": _react_paper, "transcript": _transcript,
           "swe-agent": _swe_agent, "openai-chat": _openai_chat, "anthropic-messages": _anthropic_messages,
           "otel-genai": _otel_genai}
