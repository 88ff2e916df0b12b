"""Inspect AI eval logs: the ``.json`` log and the zipped ``.eval`` log.

A log is one evaluation; each sample (and each epoch of it) is a run. The sample's
``messages`` are the conversation (read as a chat: assistant tool calls, tool replies by
``tool_call_id``, the last text turn the answer); its model events give each turn's
usage; its ``scores`` the grader's verdict, its ``target`` the expected answer. Long
strings stored once in ``attachments`` (``attachment://<hash>``) are put back in place:
each attachment once as it is (its text is in the log already), and references to it
again within a budget per log (``MAX_REPEATED_CHARS``, each cut to
``MAX_REFERENCE_CHARS``), so that a small log repeating a big attachment thousands of times
does not become gigabytes of text; what is left out is said in the run and as a warning.
A ``.eval`` log is a zip: ``header.json`` (or, for a run that never finished,
``_journal/start.json``), ``samples/<id>_epoch_<n>.json``; it is read in memory within
the limits of ``ziparchive``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    NotImportable,
    Source,
    as_source,
    params_from_schema,
    preview,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import load_json
from agentdbg.importers.openai_chat import content_text
from agentdbg.importers.sniffing import outline, wrong_root
from agentdbg.importers.ziparchive import ZIP_MAGIC, Archive, ArchiveError

NAME = "inspect-ai"
DESCRIPTION = "Inspect AI eval log (.json, or the zipped .eval): one run per sample and epoch"
BINARY = True  # a .eval log is a zip: sniff and convert are given the bytes

_ZIP_FIRST_MEMBERS = ("_journal/start.json", "header.json", "samples/", "summaries.json")
_STATUSES = {"started", "success", "cancelled", "error"}
# ToolCallError.type -> the error kinds of docs/events.md
_TOOL_ERRORS = {"parsing": "bad_args", "timeout": "timeout"}
# EvalSampleLimit.type -> (outcome, the guard it stands for)
_LIMITS = {"message": ("budget exhausted", "max_steps"), "token": ("token budget exhausted", "token_budget")}
ATTACHMENT = "attachment://"
MAX_REPEATED_CHARS = 32 << 20  # attachment text put back again (a second reference on), per log
MAX_REFERENCE_CHARS = 1 << 20  # of one such reference


def sniff(head: str | bytes, path: str = "") -> tuple[bool, str]:
    if isinstance(head, bytes):
        if head.startswith(ZIP_MAGIC):
            return _sniff_zip(head[:512].decode("latin-1"))
        head = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    if head.startswith("PK\x03\x04"):
        return _sniff_zip(head[:512])
    shape = outline(head)
    if shape.root != "{":
        if not shape.root:
            return False, "neither JSON nor a zip archive (an Inspect log is one or the other)"
        return False, wrong_root(shape, "a JSON object or a zip archive (an Inspect log is one or the other)")
    if not shape.has("eval"):
        return False, "no top-level 'eval' (an Inspect log's evaluation spec)"
    if not (shape.has("eval", "task") or shape.has("eval", "run_id")):
        return False, "a top-level 'eval' without a 'task' or 'run_id'"
    if not shape.has("version"):
        return False, "a top-level 'eval', but no top-level 'version'"
    if not (shape.has("plan") or shape.has("samples") or shape.has("status")):
        return False, "a top-level 'eval' and 'version', but no top-level 'plan', 'samples' or 'status'"
    return True, "an Inspect log: version, eval spec, plan or samples"


def _sniff_zip(head: str) -> tuple[bool, str]:
    # The first local header's name starts at byte 30 (a few characters earlier in a head
    # decoded as UTF-8, where bytes of the header's fields may have become one U+FFFD).
    window = head[:50]
    if any(name in window for name in _ZIP_FIRST_MEMBERS):
        return True, "a zip archive laid out as an Inspect .eval log"
    return False, "a zip archive, but its first member is not an Inspect log's"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    if isinstance(source, Path):
        path = path or str(source)
        source = source.read_bytes()
    name = path or ("<bytes>" if isinstance(source, bytes) else "<text>")
    if isinstance(source, bytes) and source.startswith(ZIP_MAGIC):
        return _convert_eval(source, name)
    if isinstance(source, str) and source.startswith("PK\x03\x04"):
        raise NotImportable(f"{name}: a zipped .eval log must be read as bytes, not text")
    src = as_source(source, name)
    log = load_json(src)
    if not isinstance(log, dict):
        raise NotImportable(f"{src.path}: an Inspect log is a JSON object, got {type(log).__name__}")
    samples = log.get("samples")
    if not isinstance(samples, list) or not samples:
        raise NotImportable(f"{src.path}: the Inspect log holds no samples (status "
                            f"{text_of(log.get('status')) or 'unknown'}): nothing to debug. Logs "
                            "written with log_samples off keep only the results")
    return _convert_samples(src, _Log.of(log, src), samples)


def _convert_eval(data: bytes, name: str) -> ImportResult:
    src = Source("", name)
    try:
        archive = Archive(data)
    except ArchiveError as exc:
        raise NotImportable(f"{name}: {exc}") from None
    if archive.damage:
        src.problem(archive.damage)
    problems_before = len(src.problems)
    header = _member_json(src, archive, "header.json")
    if header is None:
        header = _member_json(src, archive, "_journal/start.json")
        if header is not None:
            header.setdefault("status", "started")
            src.problem("no header.json: the evaluation did not finish (it stopped or is still "
                        "running); its samples are read from the archive")
    if header is None:
        present = [member for member in ("header.json", "_journal/start.json") if member in archive.members]
        if present:  # there, but not readable: say why (encrypted, too big, damaged...)
            reasons = "; ".join(problem.message for problem in src.problems[problems_before:]) or "it holds null"
            raise NotImportable(f"{name}: cannot read the Inspect log's header: {reasons}")
        raise NotImportable(f"{name}: a zip archive without header.json or _journal/start.json: "
                            "not an Inspect .eval log")
    samples = []
    for member in archive.names:
        if member.startswith("samples/") and member.endswith(".json"):
            sample = _member_json(src, archive, member)
            if isinstance(sample, dict):
                samples.append(sample)
            elif sample is not None:
                src.problem(f"{member} is not a JSON object; skipped")
    if not samples:
        raise NotImportable(f"{name}: the Inspect log holds no samples (status "
                            f"{text_of(header.get('status')) or 'unknown'}): nothing to debug")
    log = _Log.of(header, src)
    summaries = _member_json(src, archive, "summaries.json")
    if isinstance(summaries, list) and len(summaries) > len(samples):
        src.problem(f"summaries.json lists {len(summaries)} samples; the archive holds "
                    f"{len(samples)} of them")
    return _convert_samples(src, log, samples)


def _member_json(src: Source, archive: Archive, member: str) -> Any:
    if member not in archive.members:
        return None
    try:
        data = archive.read(member)
    except ArchiveError as exc:
        src.problem(f"{exc}; not read")
        return None
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        src.problem(f"{member} is not valid JSON ({exc}); not read")
        return None


@dataclass
class _Log:
    task: str = ""
    model: str = ""
    status: str = ""
    sample_order: dict = field(default_factory=dict)
    plan_tools: list = field(default_factory=list)

    @classmethod
    def of(cls, log: dict, src: Source) -> _Log:
        spec = log.get("eval") if isinstance(log.get("eval"), dict) else {}
        status = text_of(log.get("status"))
        error = log.get("error")
        if status == "error" or isinstance(error, dict):
            message = error.get("message") if isinstance(error, dict) else None
            src.problem("the evaluation ended with an error" + (f": {preview(text_of(message))}" if message else ""))
        dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
        ids = dataset.get("sample_ids") if isinstance(dataset.get("sample_ids"), list) else []
        order = {}
        for index, sample_id in enumerate(ids):
            order.setdefault(text_of(sample_id), index)
        return cls(text_of(spec.get("task_display_name") or spec.get("task")), text_of(spec.get("model")),
                   status if status in _STATUSES else "", order, _plan_tools(log.get("plan")))

    def sort_key(self, sample: dict) -> tuple:
        sample_id = text_of(sample.get("id"))
        epoch = sample.get("epoch") if isinstance(sample.get("epoch"), int) else 0
        natural = (0, int(sample_id), "") if sample_id.isdigit() else (1, 0, sample_id)
        return (self.sample_order.get(sample_id, len(self.sample_order)), natural, epoch)


def _plan_tools(plan: Any) -> list[dict]:
    """Tool names from the plan's use_tools steps (no descriptions there)."""
    specs: list[dict] = []
    steps = plan.get("steps") if isinstance(plan, dict) else None
    for step in steps if isinstance(steps, list) else []:
        params = step.get("params") if isinstance(step, dict) else None
        tools = params.get("tools") if isinstance(params, dict) else None
        pending = list(tools) if isinstance(tools, list) else []
        while pending:
            item = pending.pop(0)
            if isinstance(item, list):  # use_tools([...]) nests a list
                pending[:0] = item
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                specs.append(tool_spec(item["name"]))
    return specs


@dataclass
class _Budget:
    """What is left of a log's repeated attachment text, and what it left out."""

    left: int
    kept_out: int = 0  # references left as attachment://<hash>
    cut: int = 0  # references cut to MAX_REFERENCE_CHARS
    runs: int = 0  # runs with either


class _Attachments:
    """One sample's attachments, put back in place within the log's budget."""

    def __init__(self, stored: dict, budget: _Budget):
        self.stored, self.budget = stored, budget
        self.seen: set[str] = set()
        self.kept_out = self.cut = 0

    def text(self, reference: str) -> str:
        key = reference[len(ATTACHMENT):]
        stored = self.stored.get(key)
        if not isinstance(stored, str):
            return reference
        if key not in self.seen:  # the first time: as it is in the log
            self.seen.add(key)
            return stored
        size = min(len(stored), MAX_REFERENCE_CHARS)
        if size > self.budget.left:
            self.kept_out += 1
            self.budget.kept_out += 1
            return reference
        self.budget.left -= size
        if len(stored) > MAX_REFERENCE_CHARS:
            self.cut += 1
            self.budget.cut += 1
            return f"{stored[:MAX_REFERENCE_CHARS]}… [{len(stored) - MAX_REFERENCE_CHARS:,} more characters of {reference}]"
        return stored

    def note(self) -> str:
        """What the run lost, for its notes ("" when nothing)."""
        if not (self.kept_out or self.cut):
            return ""
        parts = [f"{self.kept_out:,} left as attachment://<hash>"] if self.kept_out else []
        parts += [f"{self.cut:,} cut to {MAX_REFERENCE_CHARS:,} characters"] if self.cut else []
        return f"repeated attachment references: {', '.join(parts)} ({_budget_rule()})"


def _budget_rule() -> str:
    return (f"a log puts each attachment back once, and at most {MAX_REPEATED_CHARS:,} characters of "
            f"repeated ones, each at most {MAX_REFERENCE_CHARS:,}")


def _convert_samples(src: Source, log: _Log, samples: list) -> ImportResult:
    result = ImportResult(problems=src.problems)
    readable = []
    for index, sample in enumerate(samples):
        if isinstance(sample, dict):
            readable.append(sample)
        else:
            src.problem(f"sample {index + 1} is not an object; skipped")
    budget = _Budget(MAX_REPEATED_CHARS)
    for sample in sorted(readable, key=log.sort_key):
        events, raw = _sample_run(src, log, sample, budget)
        result.runs.append(events)
        result.raw_count += raw
    if budget.runs:
        src.problem(f"repeated attachment references not put back in place in {budget.runs:,} "
                    f"{'run' if budget.runs == 1 else 'runs'}: {budget.kept_out:,} left as attachment://<hash>, "
                    f"{budget.cut:,} cut ({_budget_rule()})")
    return result


def _sample_run(src: Source, log: _Log, sample: dict, budget: _Budget) -> tuple[list, int]:
    stored = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
    attachments = _Attachments(stored, budget)
    task = _task(_resolve(sample.get("input"), attachments))  # first: the task is what the budget keeps
    events = sample.get("events")
    events = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
    messages = _resolve(sample.get("messages"), attachments)
    messages = messages if isinstance(messages, list) else []
    if not any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages):
        messages = messages + _resolve(_messages_from_events(events), attachments)
    sample_id, epoch = text_of(sample.get("id")), text_of(sample.get("epoch"))
    model = log.model or text_of(_dig(sample, "output", "model"))
    builder = RunBuilder(task,
                         name=f"{log.task or 'sample'} #{sample_id}" + (f" epoch {epoch}" if epoch else ""),
                         source=src.path, policy=f"recorded: Inspect AI ({model})" if model else "recorded: Inspect AI",
                         tools=_tools(events, attachments) or log.plan_tools)
    chat = ChatAssembler(builder, src, "inspect")
    usage = _usage_by_turn(events, messages)
    task_seen = False
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            builder.raw("inspect message", message, f"message {index + 1} is not an object")
            continue
        role = message.get("role")
        if role == "assistant":
            _assistant(chat, message, usage.get(index))
        elif role == "tool":
            _tool_reply(chat, message)
        elif role == "user" and not task_seen and message.get("source") != "generate":
            task_seen = True
            if not builder.task:
                builder.task = content_text(message.get("content"))
        else:
            text = content_text(message.get("content"))
            builder.raw(f"inspect {text_of(role) or 'message'}", message, f"{text_of(role)} message: {preview(text)}")
    chat.finish()
    outcome, guard, notes = _outcome(sample, builder)
    if log.status and log.status != "success":
        notes.append(f"log status: {log.status}")
    note = attachments.note()
    if note:
        notes.append(note)
        budget.runs += 1
    total = None if usage else _sample_usage(sample.get("model_usage"))
    verdict = _verdict(sample.get("scores"), sample.get("target"))
    scores = sample.get("scores")
    if isinstance(scores, dict) and scores:
        builder.raw("inspect scores", scores, "scores: " + ", ".join(
            f"{name}={_value_text(score)}" for name, score in scores.items()))
    error = sample.get("error")
    if isinstance(error, dict) and error.get("traceback"):
        builder.raw("inspect sample error", {"message": error.get("message"), "traceback": error.get("traceback")},
                    "the sample's error and traceback")
    return builder.build(outcome=outcome, guard=guard, message="; ".join(notes), total_tokens=total,
                         verdict=verdict), builder.raw_count


def _dig(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or len(value) <= key:
                return None
        elif not isinstance(value, dict):
            return None
        value = value[key] if isinstance(key, int) else value.get(key)
    return value


def _resolve(value: Any, attachments: _Attachments, depth: int = 0) -> Any:
    """``attachment://<hash>`` strings replaced by the text stored under that hash."""
    if isinstance(value, str):
        return attachments.text(value) if value.startswith(ATTACHMENT) else value
    if depth > 12 or not attachments.stored:
        return value
    if isinstance(value, list):
        return [_resolve(item, attachments, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key: _resolve(item, attachments, depth + 1) for key, item in value.items()}
    return value


def _task(value: Any) -> str:
    """The sample's input: a string, or the text of its user messages."""
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and m.get("role") == "user"]
        return "\n".join(content_text(m.get("content")) for m in (users or value) if isinstance(m, dict))
    return text_of(value)


def _tools(events: list, attachments: _Attachments) -> list[dict]:
    """The tool definitions the model saw (its model events), each once."""
    specs: dict[str, dict] = {}
    for event in events:
        if event.get("event") != "model" or not isinstance(event.get("tools"), list):
            continue
        for tool in event["tools"]:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"] not in specs:
                description = _resolve(tool.get("description"), attachments)
                specs[tool["name"]] = tool_spec(tool["name"], text_of(description),
                                                params_from_schema(tool.get("parameters")))
    return list(specs.values())


def _messages_from_events(events: list) -> list[dict]:
    """The conversation from model and tool events, for a sample whose messages hold no
    assistant turn (a sample stopped before its state was saved)."""
    messages: list[dict] = []
    for event in events:
        if event.get("event") == "model":
            message = _dig(event, "output", "choices", 0, "message")
            if isinstance(message, dict):
                messages.append(message)
        elif event.get("event") == "tool":
            messages.append({"role": "tool", "tool_call_id": event.get("id"), "function": event.get("function"),
                             "content": event.get("result"), "error": event.get("error")})
    return messages


def _usage_total(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = token_count(usage.get("total_tokens"))
    if total is not None:
        return total
    counted = [n for n in (token_count(usage.get(k)) for k in ("input_tokens", "output_tokens")) if n is not None]
    return sum(counted) if counted else None


def _usage_by_turn(events: list, messages: list) -> dict[int, int]:
    """Each generated assistant message's usage (by its index in ``messages``), from the
    model event that produced it: matched by message id, else by order when every
    generated turn has its model event. Empty when they cannot be matched."""
    calls = []
    for event in events:
        if event.get("event") != "model":
            continue
        message = _dig(event, "output", "choices", 0, "message")
        tokens = _usage_total(_dig(event, "output", "usage"))
        if isinstance(message, dict) and tokens is not None:
            calls.append((message.get("id"), tokens))
    turns = [i for i, m in enumerate(messages)
             if isinstance(m, dict) and m.get("role") == "assistant" and m.get("source") != "input"]
    by_id = {message_id: tokens for message_id, tokens in calls if isinstance(message_id, str)}
    found = {i: by_id[messages[i]["id"]] for i in turns if isinstance(messages[i].get("id"), str)
             and messages[i]["id"] in by_id}
    if found:
        return found
    if calls and len(calls) == len(turns):
        return {i: tokens for i, (_, tokens) in zip(turns, calls, strict=True)}
    return {}


def _sample_usage(model_usage: Any) -> int | None:
    if not isinstance(model_usage, dict):
        return None
    totals = [t for t in (_usage_total(u) for u in model_usage.values()) if t is not None]
    return sum(totals) if totals else None


def _assistant(chat: ChatAssembler, message: dict, tokens: int | None) -> None:
    content = message.get("content")
    texts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "reasoning":
            texts.append("[redacted reasoning]" if part.get("redacted") else text_of(part.get("reasoning")))
    texts.append(content_text([p for p in content if not (isinstance(p, dict) and p.get("type") == "reasoning")])
                 if isinstance(content, list) else content_text(content))
    made = message.get("tool_calls")
    made = [c for c in made if isinstance(c, dict)] if isinstance(made, list) else []
    calls = [Call(text_of(c.get("function")) or "?", c.get("arguments"), text_of(c.get("id"))) for c in made]
    steps = chat.assistant(texts, calls, tokens)
    for step, call in zip(steps if calls else [], made, strict=False):
        if call.get("parse_error"):  # the model's arguments could not be read
            step.parse_error = f"tool call {step.tool!r}: {text_of(call['parse_error'])}"
            step.output, step.tool = step.call, None


def _tool_reply(chat: ChatAssembler, message: dict) -> None:
    error = message.get("error")
    text = content_text(message.get("content"))
    failed = isinstance(error, dict) or (error is not None and error is not False)
    detail = text_of(error.get("message")) if isinstance(error, dict) else text_of(error) if failed else ""
    if failed and not text.strip():
        text = detail
    step = chat.reply(text_of(message.get("tool_call_id")), text, error=failed,
                      name=text_of(message.get("function")), data=message)
    if step is not None and failed:
        kind = text_of(error.get("type")) if isinstance(error, dict) else ""
        step.error_kind = "unknown_tool" if kind == "parsing" and "not found" in detail else _TOOL_ERRORS.get(kind, "exception")
        step.error_message = f"{kind}: {detail}" if kind else detail


def _outcome(sample: dict, builder: RunBuilder) -> tuple[str | None, str | None, list[str]]:
    error = sample.get("error")
    if isinstance(error, dict) or (isinstance(error, str) and error):
        message = text_of(error.get("message")) if isinstance(error, dict) else error
        return "error", None, [f"sample error: {preview(message, 300)}"]
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        kind = text_of(limit["type"])
        outcome, guard = _LIMITS.get(kind, (f"{kind} limit", None))
        note = f"{kind} limit {text_of(limit.get('limit'))} reached"
        return outcome, guard if builder.steps else None, [note]
    return None, None, []


def _value_text(score: Any) -> str:
    value = score.get("value") if isinstance(score, dict) else score
    return preview(text_of(value), 40)


def score_value(value: Any) -> float | None:
    """A score value as Inspect's accuracy metric reads it (C 1, P 0.5, I and N 0, yes/no,
    numbers, bools); None for what it cannot read (structures, other strings)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value) if value == value and abs(value) != float("inf") else None
    if not isinstance(value, str):
        return None
    named = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
    if value in named:
        return named[value]
    lowered = value.strip().lower()
    if lowered in ("yes", "true", "correct"):
        return 1.0
    if lowered in ("no", "false", "incorrect"):
        return 0.0
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _verdict(scores: Any, target: Any) -> dict | None:
    """The first scorer's score (every score is also kept raw)."""
    if not isinstance(scores, dict) or not scores:
        return None
    grader, score = next(iter(scores.items()))
    value = score.get("value") if isinstance(score, dict) else score
    number = score_value(value)
    correct = None if number not in (0.0, 1.0) else number == 1.0
    if isinstance(target, list):
        expected = " | ".join(text_of(t) for t in target) or None
    else:
        expected = text_of(target) or None
    return {"correct": correct, "score": number, "expected": expected, "grader": text_of(grader)}
