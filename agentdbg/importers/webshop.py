"""WebShop runs as the ReAct paper's notebook prints them (ysymyth/ReAct ``WebShop.ipynb``),
its few-shot prompt, and Reflexion's WebShop examples.

A printout holds one episode after another::

    -----------------
    0                                   the episode's index
    Action: reset
    Observation:
    Webshop
    Instruction:
    i need a long clip-in hair extension ..., and price lower than 20.00 dollars
    [Search]

    Action: search[long clip-in hair extension natural looking]
    Observation:
    [Back to Search]
    ...
    Action: click[Buy Now]
    Observation: Your score (min 0.0, max 1.0): 0.75

    3 0.5833333333333334 0.3333333333333333 0.0     episodes, average score, success rate, failure rate
    -------------

Each episode is a run. ``reset`` is the harness opening the shop, not a step: its page is
a raw record and its ``Instruction:`` the task. ``search[...]`` and ``click[...]`` are
actions, ``think[...]`` a thought (the harness answers ``OK.``, also to one the model's
length limit cut before its ``]``), ``Invalid action!`` an error observation. Buying (``click[Buy Now]``) ends the episode (outcome ``finished``) and its
score line is the verdict (grader ``score``, correct when 1.0). The notebook allows 15
actions, ``reset`` included: an episode that never bought anything stops after 14 steps,
``budget exhausted``, and the harness scores it 0, as it does a purchase whose page shows
no score. The few-shot prompt (the shop's first page, then ``Action:`` / ``Observation:``)
and Reflexion's examples (``STATUS: OK|FAIL`` and a ``Next plan:`` reflection after each
episode) read the same way, without the budget.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdbg.importers.base import ImportResult, Source, as_source, preview, tool_spec
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.sniffing import looks_like_json, webshop_transcript

NAME = "webshop"
DESCRIPTION = "WebShop printouts and examples: Action: reset / search[...] / click[...], score lines"

ACTIONS_ALLOWED = 15  # the notebook's webshop_run: range(15), the first being reset
TOOLS = [
    tool_spec("search", "search[query]: search the shop (from its first page).", {"query": "str"}),
    tool_spec("click", "click[element]: click a button, a product or an option on the page.",
              {"element": "str"}),
]

_DASHES = re.compile(r"^-{5,}[ \t]*$")
_INDEX = re.compile(r"^[ \t]*(\d+)[ \t]*$")
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"  # one way to read each digit run
_TALLY = re.compile(rf"^[ \t]*\d+ {_NUMBER} {_NUMBER} {_NUMBER}[ \t]*$")
_AVERAGES = re.compile(rf"^[ \t]*{_NUMBER} {_NUMBER} {_NUMBER}[ \t]*$")
_ACTION = re.compile(r"^Action:[ \t]?(.*)$")
_OBSERVATION = re.compile(r"^Observation:[ \t]?(.*)$")
_STATUS = re.compile(r"^STATUS:[ \t]*(OK|FAIL)[ \t]*$")
_PLAN = re.compile(r"^(?:Next|New) plan:")
_CALL = re.compile(r"(\w+)\[(.*)\]", re.S)
_SCORE = re.compile(rf"^Your score \(min 0\.0, max 1\.0\):[ \t]*({_NUMBER})[ \t]*$")
_INVALID = "Invalid action!"


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    if looks_like_json(head):
        return False, "JSON, not a WebShop printout"
    if webshop_transcript(head):
        return True, "Action: reset / search[...] / click[...] lines and the shop's pages"
    return False, "no 'Action: search[...]' or 'Action: click[...]' lines with the shop's pages"


@dataclass
class _Step:
    action: str | None
    line: int
    observation: list[str] | None = None  # its lines, joined once at the end
    loose: list[tuple[int, str]] = field(default_factory=list)  # text after the action, before any observation


@dataclass
class _Episode:
    index: str = ""
    page: list[tuple[int, str]] = field(default_factory=list)  # the shop's first page
    reset: bool = False  # opened by the harness's 'Action: reset' (a notebook printout)
    steps: list[_Step] = field(default_factory=list)
    status: str = ""  # Reflexion's STATUS: OK / FAIL
    status_line: int = 0
    reflection: list[str] = field(default_factory=list)
    reflection_line: int = 0
    after: list[tuple[int, str]] = field(default_factory=list)  # tallies after the steps

    @property
    def empty(self) -> bool:
        return not (self.index or self.reset or self.steps or any(line.strip() for _, line in self.page)
                    or self.status or self.after or self.reflection)

    @property
    def closed(self) -> bool:
        """Reflexion has written its status: what follows its reflection is another episode."""
        return bool(self.status)


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    episodes = _read(src.text)
    for count, episode in enumerate(episodes, 1):
        events, raw = _build(src, episode, count)
        result.runs.append(events)
        result.raw_count += raw
    if not episodes:
        src.problem("no WebShop episode in the text")
    result.unread = "no 'Action:' lines (reset, search[...], click[...], think[...]) in it"
    return result


def _read(text: str) -> list[_Episode]:
    episodes: list[_Episode] = []
    current = _Episode()
    index_next = False  # a line of dashes opens an episode: its index comes next
    in_plan = False
    settled = True  # no observation is being read, or a blank line ended it: a tally may come

    def close() -> None:
        nonlocal current
        if current.steps or current.reset or current.index or any(line.strip() for _, line in current.page):
            episodes.append(current)
        elif episodes:  # tallies after an episode's closing dashes: still that episode's
            episodes[-1].after.extend(current.after)
        elif not current.empty:
            episodes.append(current)
        current = _Episode()

    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if _DASHES.match(line):
            close()
            index_next, in_plan, settled = True, False, True
            continue
        if index_next:
            index_next = False
            found = _INDEX.match(line)
            if found:
                current.index = found.group(1)
                continue
        if in_plan:
            if line.strip():
                current.reflection.append(line)
                continue
            in_plan = False
        action = _ACTION.match(line)
        if current.closed and (action or (line.strip() and not _PLAN.match(line))):
            close()  # after Reflexion's status and reflection: the next episode
        step = current.steps[-1] if current.steps else None
        if action:
            settled = True
            if action.group(1).strip() == "reset":  # the harness opening the shop: a new episode
                if current.steps or current.reset:
                    close()
                current.reset = True
                continue
            current.steps.append(_Step(action.group(1), number))
            continue
        observed = _OBSERVATION.match(line)
        if observed:
            settled = False
            if current.reset and not current.steps and not current.page:
                current.page.append((number, observed.group(1)))
            elif step is not None and step.observation is None:
                step.observation = [observed.group(1)]
            else:  # an observation with no action before it
                current.steps.append(_Step(None, number, [observed.group(1)]))
            continue
        if not line.strip():
            settled = True
        elif settled and (_TALLY.match(line) or _AVERAGES.match(line)):
            current.after.append((number, line))
            continue
        status = _STATUS.match(line)
        if status:
            current.status, current.status_line = status.group(1), number
            continue
        if _PLAN.match(line) and current.closed:
            current.reflection, current.reflection_line, in_plan = [line], number, True
            continue
        if step is not None and step.observation is not None:
            step.observation.append(line)
            settled = settled and not line.strip()
        elif not current.steps:
            current.page.append((number, line))
        elif line.strip():  # an action is one line (the model stops at a newline): not part of it
            step.loose.append((number, line))
    close()
    return episodes


def _build(src: Source, episode: _Episode, count: int) -> tuple[list, int]:
    page = "\n".join(line for _, line in episode.page).strip()
    name = f"episode {episode.index}" if episode.index else f"episode {count}"
    builder = RunBuilder(_instruction(page), name=name, source=src.path, tools=TOOLS,
                         policy="recorded: ReAct WebShop run" if episode.reset else "WebShop example",
                         max_steps=ACTIONS_ALLOWED - 1 if episode.reset else None)
    if page:
        where = episode.page[0][0]
        what = "the shop's first page, opened by the harness's reset" if episode.reset else "the shop's first page"
        builder.raw("webshop page", page, f"line {where}: {what}: {preview(page)}")
    for step in episode.steps:
        _add_step(builder, step)
    ending = _ending(episode, builder)
    if episode.reflection:
        reflection = "\n".join(episode.reflection)
        builder.raw("reflexion reflection", reflection,
                    f"line {episode.reflection_line}: the agent's reflection on this attempt: {reflection}",
                    current=True)
    for number, line in episode.after:
        if _TALLY.match(line):
            note = f"the notebook's running tally (episodes, average score, success rate, failure rate): {line.strip()}"
        else:
            note = f"the notebook's final average score, success rate and failure rate: {line.strip()}"
        builder.raw("webshop text", line, f"line {number}: {note}", current=True)
    return builder.build(**ending), builder.raw_count


def _instruction(page: str) -> str:
    """The task: the text after ``Instruction:`` up to the ``[Search]`` button."""
    lines = page.split("\n")
    for at, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("Instruction:"):
            task = [stripped.removeprefix("Instruction:").strip()]
            for rest in lines[at + 1:]:
                if rest.strip().startswith("["):
                    break
                task.append(rest.strip())
            return "\n".join(part for part in task if part)
    return ""


def _add_step(builder: RunBuilder, step: _Step) -> None:
    observation = "\n".join(step.observation).strip() if step.observation is not None else None
    draft = builder.step(observation=observation)
    if observation == _INVALID:
        draft.observation_error = True
    if step.action is None:
        return  # what the shop showed, with no action printed before it
    for number, line in step.loose:
        builder.raw("webshop text", line, f"line {number}, after the action: {preview(line)}", current=True)
    written = step.action.strip()
    call = _CALL.fullmatch(written)
    if written.startswith("think["):  # the harness says OK. to any think, even one cut short
        draft.thought = written[len("think["):].removesuffix("]")
    elif call:
        draft.tool, draft.args, draft.call = call.group(1), call.group(2), written
    else:
        draft.output = step.action
        draft.parse_error = f"invalid action {written!r}: use search[query], click[element] or think[thought]"
        draft.observation_error = observation is not None


def _ending(episode: _Episode, builder: RunBuilder) -> dict[str, Any]:
    steps = builder.steps
    last: StepDraft | None = steps[-1] if steps else None
    bought = last is not None and last.tool == "click" and last.args == "Buy Now" and not last.observation_error
    score = _score(last.observation) if last is not None else None
    ending: dict[str, Any] = {}
    if bought:
        ending["outcome"] = "finished"
        ending["message"] = "the purchase (click[Buy Now]) ended the episode"
    elif episode.reset and len(steps) >= ACTIONS_ALLOWED - 1:
        ending.update(outcome="budget exhausted", guard="max_steps",
                      message=f"step budget exhausted: {len(steps)} actions after reset (the harness "
                              f"allows {ACTIONS_ALLOWED}, reset included, then scores the episode 0)")
    if score is not None:
        ending["verdict"] = {"correct": score == 1.0, "score": score, "expected": None, "grader": "score"}
    elif episode.reset and ending:
        ending["verdict"] = {"correct": False, "score": 0.0, "expected": None, "grader": "score"}
        if bought:
            ending["message"] += "; its page shows no score, which the harness counts as 0"
    elif episode.status:
        ending["verdict"] = {"correct": episode.status == "OK", "score": None, "expected": None,
                             "grader": "STATUS"}
    return ending


def _score(observation: str | None) -> float | None:
    found = _SCORE.match(observation or "")
    if not found:
        return None
    value = float(found.group(1))
    return value if math.isfinite(value) else None
