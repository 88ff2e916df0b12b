"""Reflexion's HotPotQA trial logs (noahshinn/reflexion, ``hotpotqa_runs/root/``).

Each trial is logged in one frame::

    ########################################
    BEGIN TRIAL 2
    Trial summary: Correct: 42, Incorrect: 43, Halted: 14
    #######################################
    ------------- BEGIN CORRECT AGENTS -------------

followed by every agent's prompt as the harness last built it, filed under ``BEGIN
CORRECT AGENTS``, ``BEGIN INCORRECT AGENTS`` or ``BEGIN HALTED AGENTS`` and closed by
``Correct answer: <key>``. The agent's part is a ReAct-paper episode (``Question:`` then
numbered Thought / Action / Observation, read by react_paper; the chain-of-thought agents
write them unnumbered). A retried agent's question carries the reflections it was given::

    Question: ...?You have attempted to answer following question before and failed. ...
    Reflections:
    - I got stuck in a loop where ...

and the chain-of-thought logs put the prompt's instruction, a ``Context:`` or the previous
trial (``... (END PREVIOUS TRIAL)``) before the question.

Each agent of each trial is a run named after them (``trial 2 incorrect #1``). The section
is the verdict (grader ``exact match``: the harness's normalised comparison of the answer
with the key) and the key its expected answer; a halted agent ends ``halted``. The
reflections, the prompt before the question and the trial summary are raw records.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentdbg.importers import react_paper
from agentdbg.importers.base import ImportResult, Source, as_source, preview
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.sniffing import looks_like_json, outline, reflexion_log

NAME = "reflexion"
DESCRIPTION = "Reflexion trial logs: BEGIN TRIAL n, correct / incorrect / halted agents, reflections"

_RULE = re.compile(r"^#{5,}[ \t]*$")
_TRIAL = re.compile(r"^BEGIN TRIAL (\d+)[ \t]*$")
_SUMMARY = re.compile(r"^Trial summary:")
_SECTION = re.compile(r"^-{3,}[ \t]*BEGIN (CORRECT|INCORRECT|HALTED) AGENTS(?:[ \t]*-+)?[ \t]*$")
_EXPECTED = re.compile(r"^Correct answer:[ \t]?(.*)$")
_REFLECTIONS = re.compile(r"^Reflections:[ \t]*$")
_END_PREVIOUS = "(END PREVIOUS TRIAL)"
# Where the harness's reflection header starts inside a question line (its prompts.py).
_REFLECTION_HEADER = re.compile(r"You have attempted to answer (?:the )?following question before and failed\.")
_VERDICT = {"correct": True, "incorrect": False, "halted": False}
_GRADER = "exact match"


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    if looks_like_json(head):
        found = outline(head)
        if found.root == "[" and found.has("*", "is_success") and found.has("*", "memory"):
            return False, ("a Reflexion env_results file: each environment's success and reflections, "
                           "no steps (the trial's log has them)")
        return False, "JSON, not a Reflexion trial log"
    if reflexion_log(head):
        return True, "BEGIN TRIAL n / BEGIN CORRECT AGENTS sections"
    return False, "no 'BEGIN TRIAL n' or 'BEGIN CORRECT AGENTS' lines"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    reader = _Reader(src, result)
    for number, line in enumerate(src.text.split("\n"), 1):
        reader.line(number, line.rstrip("\r"))
    reader.flush()
    reader.finish()
    result.unread = "no agent (a Question: and its Thought / Action / Observation lines) in it"
    return result


class _Reader:
    """Splits the log into agents' blocks and makes each a run."""

    def __init__(self, src: Source, result: ImportResult):
        self.src = src
        self.result = result
        self.trial = ""
        self.section = ""
        self.counts: dict[tuple[str, str], int] = {}
        self.loose: list[tuple[int, str]] = []  # framing kept raw, for the next run
        self.lines: list[str] = []
        self.numbers: list[int] = []
        self.stepped = False  # the block has steps of its own: a question after them is another agent's
        self.built: tuple[RunBuilder, dict] | None = None  # the last run, built once nothing more can join it

    def line(self, number: int, line: str) -> None:
        if _RULE.match(line):
            self.flush()
            return
        trial = _TRIAL.match(line)
        if trial:
            self.flush()
            self.trial, self.section = trial.group(1), ""
            return
        if _SUMMARY.match(line):
            self.flush()
            self.loose.append((number, line))
            return
        section = _SECTION.match(line)
        if section:
            self.flush()
            self.section = section.group(1).lower()
            return
        if self.stepped and react_paper.is_question(line):  # a log without keys ('Correct answer:')
            self.flush()
        self.lines.append(line)
        self.numbers.append(number)
        if react_paper.is_step_line(line):
            self.stepped = True
        elif line.strip() == _END_PREVIOUS:  # the previous trial shown to the agent ends here
            self.stepped = False
        if _EXPECTED.match(line):  # the harness closes each agent's block with its key
            self.flush()

    def flush(self) -> None:
        lines, numbers = self.lines, self.numbers
        self.lines, self.numbers, self.stepped = [], [], False
        if not any(line.strip() for line in lines):
            return
        agent = _Agent.read(lines, numbers, self.src)
        if not agent.episodes:
            self.loose.extend((n, line) for n, line in zip(numbers, lines, strict=True) if line.strip())
            return
        key = (self.trial, self.section)
        self.counts[key] = self.counts.get(key, 0) + 1
        name = " ".join(part for part in (f"trial {self.trial}" if self.trial else "", self.section,
                                          f"#{self.counts[key]}") if part)
        for count, episode in enumerate(agent.episodes, 1):
            title = name if len(agent.episodes) == 1 else f"{name} ({count})"
            self._run(agent, episode, title, first=count == 1)

    def finish(self) -> None:
        """Build the last run, with any framing after it (a trial with no agent, say)."""
        if self.built is None:
            if self.loose:
                self.src.problem("no agent in the trial log")
            return
        builder, ending = self.built
        for number, line in self.loose:
            builder.raw("reflexion text", line, f"line {number}: {preview(line)}", current=True)
        self.loose = []
        self.result.runs.append(builder.build(**ending))
        self.result.raw_count += builder.raw_count
        self.built = None

    def _run(self, agent: _Agent, episode: react_paper._Episode, name: str, first: bool) -> None:
        if self.built is not None:
            loose, self.loose = self.loose, []
            self.finish()
            self.loose = loose
        builder = RunBuilder(episode.task.strip(), name=name, source=self.src.path,
                             policy="recorded: Reflexion trial log", tools=react_paper.TOOLS)
        for number, line in self.loose:
            builder.raw("reflexion text", line, f"line {number}: {preview(line)}")
        self.loose = []
        if first:
            agent.keep(builder)
        for number, line in episode.preamble:
            builder.raw("reflexion text", line, f"line {number}, before the question: {preview(line)}")
        react_paper.add_steps(builder, episode)
        for number, line in episode.after:
            builder.raw("reflexion text", line, f"line {number}: {preview(line)}")
        answered = builder.default_outcome() == "answered"
        where = agent.expected_line or episode.line
        if self.section in ("correct", "incorrect") and builder.steps and not answered:
            self.src.problem(f"filed under {self.section.upper()} AGENTS but gives no Finish[...] answer", where)
        if self.section == "halted" and answered:
            self.src.problem("filed under HALTED AGENTS but gives a Finish[...] answer", where)
        outcome, message = None, ""
        if self.section == "halted" and not answered:
            outcome = "halted"
            message = ("the harness halted the agent before it answered: at its step limit (6 by "
                       "default) or when its prompt grew past its token limit")
        correct = _VERDICT.get(self.section)
        if correct is None:
            correct = _graded(builder)
        verdict = None
        if correct is not None or agent.expected is not None:
            verdict = {"correct": correct, "score": None, "expected": agent.expected, "grader": _GRADER}
        self.built = builder, {"outcome": outcome, "message": message, "verdict": verdict}


class _Agent:
    """One agent's block: the prompt before its question, its reflections, its episode and
    its key."""

    def __init__(self) -> None:
        self.prompt: list[tuple[int, str]] = []
        self.reflections: list[list[str]] = []
        self.reflections_line = 0
        self.header = ""
        self.expected: str | None = None
        self.expected_line = 0
        self.episodes: list[react_paper._Episode] = []

    @classmethod
    def read(cls, lines: list[str], numbers: list[int], src: Source) -> _Agent:
        agent = cls()
        if lines and _EXPECTED.match(lines[-1]):
            agent.expected = _EXPECTED.match(lines[-1]).group(1)
            agent.expected_line = numbers[-1]
            lines, numbers = lines[:-1], numbers[:-1]
        # The agent's own question is the last one: a previous trial shown to it comes before.
        start = next((i for i in range(len(lines) - 1, -1, -1) if react_paper.is_question(lines[i])), None)
        if start is None:
            start = next((i for i, line in enumerate(lines) if react_paper.is_step_line(line)), len(lines))
        body_lines: list[str] = []
        body_numbers: list[int] = []
        listing = False  # inside a 'Reflections:' list
        for index, (line, number) in enumerate(zip(lines, numbers, strict=True)):
            if index == start and react_paper.is_question(line):
                header = _REFLECTION_HEADER.search(line)
                if header:
                    agent.header = line[header.start():].strip()
                    line = line[:header.start()]
            elif _REFLECTIONS.match(line):
                listing = True
                agent.reflections_line = agent.reflections_line or number
                continue
            elif listing and not react_paper.is_step_line(line) and (line.strip() or not agent.reflections):
                if line.startswith("- "):
                    agent.reflections.append([line[2:]])
                elif line.strip() and agent.reflections:
                    agent.reflections[-1].append(line)
                elif line.strip():
                    agent.reflections.append([line])
                continue
            listing = False
            if index < start:
                agent.prompt.append((number, line))
            else:
                body_lines.append(line)
                body_numbers.append(number)
        if any(line.strip() for line in body_lines):
            agent.episodes = react_paper.read_episodes(body_lines, body_numbers, src)
        else:
            agent.prompt.extend(zip(body_numbers, body_lines, strict=True))
        return agent

    def keep(self, builder: RunBuilder) -> None:
        """The prompt before the question and the reflections, as raw records of step 1."""
        prompt = [(n, line) for n, line in self.prompt if line.strip()]
        if prompt:
            text = "\n".join(line for _, line in prompt)
            what = "the previous trial" if any(line.strip() == _END_PREVIOUS for _, line in prompt) else ""
            what = what or ("the context" if prompt[0][1].startswith("Context:") else "the instruction")
            builder.raw("reflexion prompt", text, f"lines {prompt[0][0]}-{prompt[-1][0]}: the agent's prompt "
                        f"before its question ({what}): {preview(text)}")
        if self.reflections or self.header or self.reflections_line:
            items = ["\n".join(parts).strip() for parts in self.reflections]
            shown = "; ".join(f"({n}) {item}" for n, item in enumerate(items, 1)) or "none listed"
            builder.raw("reflexion reflections", {"header": self.header, "reflections": items},
                        f"line {self.reflections_line or '?'}: the reflections on its earlier trials the "
                        f"agent was given: {shown}")


def _graded(builder: RunBuilder) -> bool | None:
    """The harness's word in the last observation (``Answer is CORRECT``), when no section says."""
    last = builder.steps[-1].observation if builder.steps else None
    if last == "Answer is CORRECT":
        return True
    if last == "Answer is INCORRECT":
        return False
    return None
