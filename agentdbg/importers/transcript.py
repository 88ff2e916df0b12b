"""Plain-text ReAct transcripts in the action formats agentdbg's engine reads.

``Question: ...`` then ``Thought:`` / ``Action: name[argument]`` (bracket format),
``Action: tool: argument`` (colon format) or ``Action: name`` + ``Action Input: {json}``
(JSON format), ``Observation: ...``, and ``Final Answer: ...`` (or ``Answer: ...``):
what the engine's own transcript looks like, and what a notebook prints. Each
``Question:`` (or ``Task:``) line starts a run. Each step is read with the engine's own
parsers, so an action the engine would refuse is a parse error here too; an observation
that starts with ``ERROR`` is an error observation. Lines that belong to no step are kept
as raw records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from agentdbg.engine.parsers import (
    Action,
    FinalAnswer,
    parse_bracket_action,
    parse_colon_action,
    parse_json_action,
)
from agentdbg.importers.base import ImportResult, as_source, preview
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.sniffing import (
    looks_like_json,
    numbered_steps,
    reflexion_log,
    webshop_transcript,
)

NAME = "transcript"
DESCRIPTION = "plain-text ReAct transcript: Thought / Action / Observation / Final Answer lines"

_LABEL = re.compile(r"^[ \t]*(Question|Task|Thought|Action Input|Action|Observation|Final Answer|Answer)"
                    r"[ \t]*:[ \t]?(.*)$")
_ERROR = re.compile(r"^\s*ERROR\b")


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    if looks_like_json(head):
        return False, f"begins with {head.lstrip()[0]!r}: JSON, not a text transcript"
    if numbered_steps(head):
        return False, "numbered lines ('Thought 1:', 'Action 1:'): the ReAct paper's numbering, not this format's"
    if reflexion_log(head):
        return False, "Reflexion's trial sections (BEGIN TRIAL n, BEGIN CORRECT AGENTS): the reflexion format"
    if webshop_transcript(head):
        return False, "WebShop's actions (reset, search[...], click[...]) and pages: the webshop format"
    labels = {m.group(1) for m in (_LABEL.match(line) for line in head.splitlines()) if m}
    acts, context = labels & {"Action", "Final Answer", "Answer"}, labels & {"Thought", "Observation", "Question", "Task"}
    if acts and context:
        return True, "Thought / Action / Observation lines"
    if labels:
        wanted = "Action: or Final Answer: line" if not acts else "Thought:, Observation: or Question: line"
        return False, f"{', '.join(sorted(labels))} lines, but no {wanted}"
    return False, "no Thought:/Action:/Observation:/Final Answer: lines"


@dataclass
class _Step:
    parts: list[tuple[str, str, int]] = field(default_factory=list)  # (label, text, line)
    more: dict[int, list[str]] = field(default_factory=dict)  # part index -> continuation lines

    def join_lines(self) -> None:
        """Add the continuation lines to their parts: once, as adding each line to a
        growing text would copy it again every line (quadratic on a long observation)."""
        for index, lines in self.more.items():
            label, text, where = self.parts[index]
            self.parts[index] = (label, "\n".join([text, *lines]), where)
        self.more = {}

    def labels(self) -> set[str]:
        return {label for label, _, _ in self.parts}


@dataclass
class _Run:
    task: str = ""
    line: int = 0
    steps: list[_Step] = field(default_factory=list)
    loose: list[tuple[int, str]] = field(default_factory=list)  # lines outside any step, and where
    more_task: list[str] = field(default_factory=list)  # the task's continuation lines


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    runs = _read(src.text)
    for count, run in enumerate(runs, 1):
        builder = RunBuilder(run.task, name=f"run {count}" if len(runs) > 1 else "", source=src.path,
                             policy="recorded transcript")
        for number, line in run.loose:
            builder.raw("transcript line", line, f"line {number}, outside any step: {preview(line)}")
        for step in run.steps:
            _add_step(builder, step)
        result.runs.append(builder.build())
        result.raw_count += builder.raw_count
    if not runs:
        src.problem("no transcript steps found")
    return result


def _read(text: str) -> list[_Run]:
    runs: list[_Run] = []
    current: _Run | None = None
    step: _Step | None = None
    before: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        found = _LABEL.match(line)
        label = found.group(1) if found else None
        if label in ("Question", "Task"):
            current, step = _Run(found.group(2), number), None
            current.loose, before = before, []
            runs.append(current)
            continue
        if label is None:
            if step is not None:
                step.more.setdefault(len(step.parts) - 1, []).append(line)
            elif current is not None and not current.steps and line.strip():
                current.more_task.append(line)
            elif line.strip():
                (current.loose if current is not None else before).append((number, line))
            continue
        if current is None:
            current = _Run(line=number)
            current.loose, before = before, []
            runs.append(current)
        if step is None or _starts_step(step, label):
            step = _Step()
            current.steps.append(step)
        step.parts.append((label, found.group(2), number))
    if before:
        if runs:
            runs[-1].loose.extend(before)
        else:
            runs.append(_Run(loose=before))
    for run in runs:
        if run.more_task:
            run.task = "\n".join([run.task, *run.more_task])
        for step in run.steps:
            step.join_lines()
    return runs


def _starts_step(step: _Step, label: str) -> bool:
    have = step.labels()
    if label == "Thought":
        return bool(have - {"Thought"})
    if label in ("Action", "Final Answer", "Answer"):
        return bool(have & {"Action", "Observation", "Final Answer", "Answer"})
    if label == "Action Input":
        return "Action" not in have or "Action Input" in have or "Observation" in have
    return "Observation" in have  # a second observation: a reply with no action


def _add_step(builder: RunBuilder, step: _Step) -> None:
    observation = None
    output_lines = []
    for label, text, _ in step.parts:
        if label == "Observation":
            observation = text.strip()
        else:
            output_lines.append(f"{label}: {text}")
    output = "\n".join(output_lines).strip()
    draft = builder.step()
    if observation is not None:
        draft.observation = observation
        draft.observation_error = bool(_ERROR.match(observation))
    if not output:
        return  # an observation alone: what the tool said, with no action recorded
    if step.labels() == {"Thought", "Observation"} or step.labels() == {"Thought"}:
        draft.thought = "\n".join(t.strip() for label, t, _ in step.parts if label == "Thought")
        return
    parsed, why = _parse(output, step.labels())
    if isinstance(parsed, FinalAnswer):
        draft.thought, draft.answer = parsed.thought, parsed.answer or ""
    elif isinstance(parsed, Action):
        draft.thought, draft.tool, draft.args, draft.call = parsed.thought, parsed.name, parsed.args, parsed.call
    else:
        thoughts = [t.strip() for label, t, _ in step.parts if label == "Thought"]
        draft.thought = "\n".join(thoughts)
        draft.parse_error, draft.output = why, output


def _parse(output: str, labels: set[str]) -> tuple[Action | FinalAnswer | None, str]:
    """The first of the engine's text formats that reads the step; else the most fitting
    format's complaint."""
    if "Action Input" in labels:
        order = [parse_json_action]
    else:
        order = [parse_bracket_action, parse_colon_action]
    first_error = ""
    for parser in order:
        try:
            return parser(output), ""
        except ValueError as exc:
            first_error = first_error or str(exc)
    return None, first_error
