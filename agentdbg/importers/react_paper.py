"""The ReAct paper's transcripts: run logs and few-shot prompt files.

An episode opens with ``Question:`` or ``Claim:`` (a run log puts the question's index
first: ``3687 Claim: ...``), then numbered ``Thought N:`` / ``Action N:`` /
``Observation N:`` lines (``Action N:Search[x]`` without a space too); ``Finish[answer]``
ends it. A run log separates episodes with a line of dashes and closes each with the
harness's result dict (``{'steps': 2, 'answer': 'REFUTES', 'gt_answer': ...}``) and a
running tally line. A prompt file is a JSON object of prompt strings, each holding
several example episodes (also in the unnumbered ``Thought:`` / ``Answer:`` form).

Each episode is a run. The paper's harness allows 7 steps: a run-log episode has
``max_steps`` 7, and one that never finished (its dict says one step more than printed
and an empty answer: the harness sent a last ``finish[]`` it did not print) ends
``budget exhausted`` after its printed steps. An ``Invalid action`` observation makes
its step a parse error. The result dict's grade is the run's verdict (``em``, ``reward``,
``gt_answer``); the dict itself and the tally are kept as raw records.

When the model's output has no ``Action N:`` line, the harness prints ``ohh...`` and that
output, keeps its first line as the thought, asks for the action alone, then prints the
step as usual: the output is a retry note (a raw record) on that step, not a step. Lines
that frame episodes in other harnesses' logs (``#####``, ``BEGIN TRIAL n``, ``BEGIN
CORRECT AGENTS``) end the episode before them and are kept as raw records.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    NotImportable,
    Source,
    as_source,
    preview,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.sniffing import (
    looks_like_json,
    numbered_steps,
    prompt_strings,
    reflexion_log,
)

NAME = "react-paper"
DESCRIPTION = "ReAct paper transcripts: Question/Claim, numbered Thought/Action/Observation, Finish[...]"

STEP_BUDGET = 7  # the paper's harness: steps allowed per episode
TOOLS = [
    tool_spec("Search", "Search[entity]: the first paragraph of the entity's Wikipedia page, "
              "or similar titles when there is no page.", {"entity": "str"}),
    tool_spec("Lookup", "Lookup[keyword]: the next sentence with the keyword in the current page.",
              {"keyword": "str"}),
]

_SEPARATOR = re.compile(r"^-{5,}[ \t]*$")
# Reflexion's framing lines: never part of an observation (see reflexion.py).
_FRAME = re.compile(r"^(?:#{5,}|BEGIN TRIAL \d+|Trial summary:.*|-{3,}[ \t]*BEGIN [A-Z ]+ AGENTS(?:[ \t]*-+)?)[ \t]*$")
_RETRY = "ohh..."  # the harness's note when the model's output had no 'Action N: ' line
_HEADER = re.compile(r"^[ \t]*(?:(\d+)[ \t]+)?(Question|Claim)[ \t]*:[ \t]?(.*)$")
# A run of spaces is read once: "[ \t]*(\d*)[ \t]*" would try every split of it (quadratic).
_FIELD = re.compile(r"^[ \t]*(Thought|Action|Observation|Answer)[ \t]*(?:(\d+)[ \t]*)?:[ \t]?(.*)$")
def _is_result(line: str) -> bool:
    """A ``{... 'steps' ...}`` line: the paper's per-episode result record. (A regex with
    two ``.*`` around 'steps' takes quadratic time on a long line of 'steps'.)"""
    inner = line.strip(" \t")
    return inner.startswith("{") and inner.endswith("}") and "'steps'" in inner[1:-1]


_CALL = re.compile(r"^(\w+)\[(.*)\]$", re.S)
_JSON_EPISODE = re.compile(r"(?:Question|Claim)[ \t]*:")
_JSON_STEP = re.compile(r"\\n[ \t]*(?:(?:Thought|Action)[ \t]*\d+|Answer)[ \t]*:")


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    if looks_like_json(head):
        if prompt_strings(head) and _JSON_EPISODE.search(head) and _JSON_STEP.search(head):
            return True, "prompt strings holding Question/Claim episodes"
        return False, "JSON, but no prompt strings holding Question/Claim episodes of numbered steps"
    if reflexion_log(head):
        return False, "Reflexion's trial sections (BEGIN TRIAL n, BEGIN CORRECT AGENTS): the reflexion format"
    numbered = numbered_steps(head)
    if re.search(r"^[ \t]*Action[ \t]*\d+[ \t]*:", head, re.M):
        if numbered >= 2:
            return True, "numbered Thought/Action/Observation lines"
        return False, "one numbered line only (an 'Action N:'): a run has at least two"
    if numbered:
        return False, "numbered Thought/Observation lines, but no 'Action N:' line"
    return False, "no numbered 'Thought N:', 'Action N:' or 'Observation N:' lines"


@dataclass
class _Field:
    label: str
    number: str
    text: str
    line: int
    more: list[str] = field(default_factory=list)  # continuation lines, joined once at the end
    retries: list[tuple[int, str]] = field(default_factory=list)  # (line, model output) retried before it


@dataclass
class _Episode:
    task: str = ""
    index: str = ""
    line: int = 0
    fields: list[_Field] = field(default_factory=list)
    result: dict | None = None
    result_line: int = 0
    after: list[tuple[int, str]] = field(default_factory=list)  # lines after the result
    preamble: list[tuple[int, str]] = field(default_factory=list)
    more_task: list[str] = field(default_factory=list)  # the task's continuation lines
    retries: list[tuple[int, str]] = field(default_factory=list)  # retry notes not yet followed by a step

    def join_lines(self) -> None:
        """Add the continuation lines to their texts: once, as adding each line to a
        growing text would copy it again every line (quadratic on a long observation)."""
        if self.more_task:
            self.task = "\n".join([self.task, *self.more_task])
            self.more_task = []
        for item in self.fields:
            if item.more:
                item.text = "\n".join([item.text, *item.more])
                item.more = []

    @property
    def empty(self) -> bool:
        return not (self.task or self.fields or self.result is not None)


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    if looks_like_json(src.text):
        try:
            prompts = json.loads(src.text)
        except ValueError as exc:
            raise NotImportable(f"{src.path}: not valid JSON: {exc}") from None
        if not isinstance(prompts, dict):
            raise NotImportable(f"{src.path}: a prompt file is a JSON object of prompt strings")
        for key, text in prompts.items():
            if not isinstance(text, str):
                src.problem(f"prompt {key!r} is not a string; skipped")
                continue
            _add_episodes(result, src, _episodes(text, src), prefix=str(key), budget=False)
        return result
    _add_episodes(result, src, _episodes(src.text, src), prefix="", budget=True)
    return result


def _episodes(text: str, src: Source) -> list[_Episode]:
    lines = text.split("\n")
    return read_episodes(lines, range(1, len(lines) + 1), src)


def read_episodes(lines: Sequence[str], numbers: Sequence[int], src: Source) -> list[_Episode]:
    """The episodes in ``lines``; ``numbers[i]`` is the line number of ``lines[i]`` in the file."""
    episodes: list[_Episode] = []
    current = _Episode()
    preamble: list[tuple[int, str]] = []

    def close() -> None:
        nonlocal current
        current.join_lines()
        if not current.empty:
            episodes.append(current)
        elif current.after:
            preamble.extend(current.after)
        current = _Episode()

    index = 0
    while index < len(lines):
        line, number = lines[index].rstrip("\r"), numbers[index]
        index += 1
        if _SEPARATOR.match(line):
            close()
            continue
        if _FRAME.match(line):
            close()
            preamble.append((number, line))
            continue
        if current.result is not None:
            if line.strip():
                current.after.append((number, line))
            continue
        header = _HEADER.match(line)
        if header:
            if not current.empty:
                close()
            current.index, current.task, current.line = header.group(1) or "", header.group(3), number
            if preamble:
                current.preamble, preamble = preamble, []
            continue
        if _is_retry(line) and not current.empty:
            end = _retry_end(lines, index - 1)
            while end > index and not lines[end - 1].strip():  # blank lines after it: the printout's
                end -= 1
            output = "\n".join([line[len(_RETRY) + 1:], *(text.rstrip("\r") for text in lines[index:end])])
            current.retries.append((number, output))
            index = end
            continue
        found = _FIELD.match(line)
        if found:
            if current.empty and not current.line:
                current.line = number
            current.fields.append(_Field(found.group(1), found.group(2) or "", found.group(3), number,
                                         retries=current.retries))
            current.retries = []
            continue
        if _is_result(line):
            try:
                value = ast.literal_eval(line.strip())  # literals only: never runs code
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if isinstance(value, dict):
                current.result, current.result_line = value, number
                continue
        if current.fields:
            current.fields[-1].more.append(line)
        elif line.strip():
            if current.empty:
                preamble.append((number, line))
            else:
                current.more_task.append(line)
    close()
    if preamble:
        if episodes:
            episodes[-1].after.extend(preamble)
        else:
            src.problem("no Question/Claim episode in the text")
    return episodes


def is_question(line: str) -> bool:
    """A ``Question:`` / ``Claim:`` line: the start of an episode."""
    return _HEADER.match(line) is not None


def is_step_line(line: str) -> bool:
    """A ``Thought N:`` / ``Action N:`` / ``Observation N:`` / ``Answer:`` line."""
    return _FIELD.match(line) is not None


def _is_retry(line: str) -> bool:
    return line == _RETRY or line.startswith(_RETRY + " ")


def _retry_end(lines: Sequence[str], start: int) -> int:
    """Where the retry note at ``lines[start]`` ends: at the step the harness printed after
    it, whose ``Thought N:`` is the first line of the model's output; failing that, at the
    first ``Thought N:`` before anything that cannot be part of the output."""
    first = lines[start][len(_RETRY):].strip()
    expected = first or None
    fallback = None
    index = start + 1
    while index < len(lines):
        line = lines[index].rstrip("\r")
        if (_SEPARATOR.match(line) or _FRAME.match(line) or _HEADER.match(line) or _is_result(line)
                or _is_retry(line)):
            break
        found = _FIELD.match(line)
        if found and found.group(2) and found.group(1) == "Thought":
            if expected is not None and found.group(3).strip() == expected:
                return index
            fallback = index if fallback is None else fallback
        elif found and found.group(2) and found.group(1) == "Observation":
            break  # the harness stops the model's output before 'Observation N:'
        if expected is None and line.strip():
            expected = line.strip()
        index += 1
    return fallback if fallback is not None else index


def _group(fields: list[_Field]) -> list[dict[str, _Field]]:
    """Fields -> steps: a step is one number's Thought / Action / Observation (or an
    unnumbered Thought / Answer)."""
    order = {"Thought": 0, "Action": 1, "Answer": 1, "Observation": 2}
    steps: list[dict[str, _Field]] = []
    for item in fields:
        current = steps[-1] if steps else None
        if current is not None:
            numbers = {f.number for f in current.values()}
            last = max(order[label] for label in current)
            same_number = item.number in numbers or not item.number
            if same_number and item.label not in current and order[item.label] >= last:
                current[item.label] = item
                continue
        steps.append({item.label: item})
    return steps


def _add_episodes(result: ImportResult, src: Source, episodes: list[_Episode], prefix: str,
                  budget: bool) -> None:
    for count, episode in enumerate(episodes, 1):
        if episode.index:
            name = f"question {episode.index}"
        elif prefix:
            name = f"{prefix} #{count}"
        else:
            name = f"episode {count}"
        from_log = budget and episode.result is not None
        builder = RunBuilder(episode.task.strip(), name=name, source=src.path,
                             policy="recorded: ReAct paper run" if from_log else "ReAct paper example",
                             tools=TOOLS, max_steps=STEP_BUDGET if from_log else None)
        where = "before the first episode" if count == 1 else "between episodes"
        for number, line in episode.preamble:
            builder.raw("react-paper text", line, f"line {number}, {where}: {preview(line)}")
        add_steps(builder, episode)
        ending = _ending(src, episode, builder)
        if episode.result is not None:
            builder.raw("react-paper result", episode.result, _describe_result(episode.result))
        for number, line in episode.after:
            note = f"line {number}, after the result: {preview(line)}"
            if re.fullmatch(r"\s*\d+ \d+ [\d.]+ [\d.eE+-]+\s*", line):
                note = f"the notebook's running tally (correct, episodes, accuracy, seconds per episode): {line.strip()}"
            builder.raw("react-paper text", line, note)
        result.runs.append(builder.build(**ending, verdict=_verdict(episode.result)))
        result.raw_count += builder.raw_count


def add_steps(builder: RunBuilder, episode: _Episode) -> None:
    """The episode's steps, each with the harness's retry notes just before it."""
    for step in _group(episode.fields):
        for item in step.values():
            for number, output in item.retries:
                builder.raw("react-paper retry", output, _retry_note(number, output))
        _add_step(builder, step)
    for number, output in episode.retries:  # the log stops before the step retried
        builder.raw("react-paper retry", output, _retry_note(number, output), current=True)


def _retry_note(number: int, output: str) -> str:
    return (f"line {number}: the harness found no 'Action N: ' line in the model's output "
            f"(it printed 'ohh...' and the output), kept the output's first line as the thought "
            f"and asked for the action alone; the output: {preview(output)}")


def _add_step(builder: RunBuilder, fields: dict[str, _Field]) -> None:
    thought = fields["Thought"].text.strip() if "Thought" in fields else ""
    observed = fields.get("Observation")
    observation = observed.text.strip() if observed is not None else None
    step = builder.step(thought=thought, observation=observation)
    if "Answer" in fields:
        step.answer = fields["Answer"].text.strip()
    if "Action" not in fields:
        return
    written = fields["Action"].text.rstrip()
    call = _CALL.match(written.strip())
    refused = observation is not None and observation[:14].lower() == "invalid action"  # Reflexion: "Invalid Action."
    if call and not refused:
        name, argument = call.groups()
        if name.lower() == "finish":
            step.answer = argument
        else:
            step.tool, step.args, step.call = name, argument, f"{name}[{argument}]"
        return
    step.output = written
    step.observation_error = refused
    if refused:
        step.parse_error = f"invalid action {written!r}: the environment could not read it"
    else:
        step.parse_error = (f"invalid action {written.strip()!r}: use Search[entity], "
                            "Lookup[keyword] or Finish[answer]")


def _ending(src: Source, episode: _Episode, builder: RunBuilder) -> dict[str, Any]:
    steps = builder.steps
    printed = len(steps)
    answer = steps[-1].answer if steps else None
    if episode.result is None:
        return {}
    said_steps, said_answer = episode.result.get("steps"), episode.result.get("answer")
    if answer is None and said_steps == printed + 1 and said_answer in ("", None):
        builder.max_steps = printed  # the budget the harness ran out of (7 in the paper)
        return {"outcome": "budget exhausted", "guard": "max_steps",
                "message": f"step budget exhausted: {printed} steps used (the harness then "
                           f"sent finish[] without printing it: its result counts {said_steps} "
                           "steps and an empty answer)"}
    if said_steps == printed and (said_answer == answer or (not said_answer and answer is None)):
        return {}
    src.problem(f"the result says {said_steps} steps and answer {said_answer!r}, the transcript "
                f"shows {printed} steps and answer {answer!r}", episode.result_line)
    return {}


def _verdict(result: dict | None) -> dict | None:
    """The harness's grade from its result dict: ``em`` (exact match, else ``reward``) says
    correct or wrong, ``reward`` is the score its tally sums, ``gt_answer`` the expected answer."""
    if result is None:
        return None
    numbers = {key: _grade(result.get(key)) for key in ("em", "reward")}
    grader = "em" if numbers["em"] is not None else "reward" if numbers["reward"] is not None else None
    if grader is None:
        return None
    grade = numbers[grader]
    expected = result.get("gt_answer")
    return {"correct": True if grade >= 1 else False if grade <= 0 else None,
            "score": numbers["reward"] if numbers["reward"] is not None else grade,
            "expected": expected if isinstance(expected, str) else None if expected is None else str(expected),
            "grader": grader}


def _grade(value: Any) -> int | float | None:
    """A grade as the harness wrote it: 0/1, True/False (its exact match), or a number."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
        return value
    return None


def _describe_result(result: dict) -> str:
    shown = ", ".join(f"{key} {value!r}" for key, value in result.items() if key not in ("steps", "answer"))
    return f"the harness's result: {shown}" if shown else "the harness's result"
