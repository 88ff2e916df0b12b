"""ALFWorld episodes in the ``> command`` form: the ReAct paper's ALFWorld prompts
(ysymyth/ReAct ``prompts/alfworld.json``), Reflexion's ALFWorld examples and trial logs.

An episode::

    You are in the middle of a room. Looking quickly around you, you see a cabinet 4, ...
    Your task is to: put some spraybottle on toilet.
    > think: First I need to find a spraybottle. ...
    OK.
    > go to cabinet 1
    On the cabinet 1, you see a cloth 1, a soapbar 1, a soapbottle 1.

``Your task is to:`` is the task, the room before it the environment's first observation
(a raw record). Each ``> command`` is a step: the command an action (tool ``go to``,
``take``, ``put``, ..., the rest its argument), the line after it the observation;
``> think: ...`` is a thought (the harness answers ``OK.``). ``Nothing happens.`` is the
environment refusing a command: an error observation. Reflexion ends an episode with
``STATUS: OK`` or ``STATUS: FAIL`` (the verdict, grader ``STATUS``; OK is ``finished``) and
a ``New plan:`` reflection, kept raw. Its trial log frames each environment::

    #####

    Environment #3:
    Interact with a household to solve a task. Here are two examples.
    <two example episodes>
    Your memory for the task below:
    Trial 0:
    <a reflection>
    Here is the task:
    You are in the middle of a room. ...
    > ...

    STATUS: FAIL

    #####

Each environment is a run (``environment 3``): before ``Here is the task:`` come the prompt
(the instruction and examples, raw) and the memory (the reflections the agent was given,
raw). Reflexion stops an episode when the agent repeats its last command (``action
repeated``) or after 49 commands (``budget exhausted``). ``Environment #3: Success`` (solved
in an earlier trial, not run again) and the trial's summary are raw records. A JSON file of
prompt strings is one run per string, named by its key.
"""

from __future__ import annotations

import json
import re
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
    alfworld_prompts,
    alfworld_text,
    looks_like_json,
    prompt_strings,
)

NAME = "alfworld"
DESCRIPTION = "ALFWorld episodes: Your task is to: ..., '> command' lines, Reflexion's trial logs"

COMMANDS_ALLOWED = 49  # Reflexion's alfworld_run (and the ReAct notebook): at most 49 commands
_TARGET = {"target": "str"}
TOOLS = [
    tool_spec("go to", "go to RECEPTACLE: walk to a receptacle and see what is on or in it.", _TARGET),
    tool_spec("open", "open RECEPTACLE", _TARGET),
    tool_spec("close", "close RECEPTACLE", _TARGET),
    tool_spec("take", "take OBJECT from RECEPTACLE", _TARGET),
    tool_spec("put", "put OBJECT in/on RECEPTACLE", _TARGET),
    tool_spec("clean", "clean OBJECT with RECEPTACLE (a sinkbasin)", _TARGET),
    tool_spec("heat", "heat OBJECT with RECEPTACLE (a microwave)", _TARGET),
    tool_spec("cool", "cool OBJECT with RECEPTACLE (a fridge)", _TARGET),
    tool_spec("use", "use OBJECT (a lamp)", _TARGET),
    tool_spec("examine", "examine OBJECT or RECEPTACLE", _TARGET),
    tool_spec("look", "look around the room"),
    tool_spec("inventory", "list what the agent carries"),
]

_RULE = re.compile(r"^#{5,}[ \t]*$")
_ENVIRONMENT = re.compile(r"^Environment #(\d+):[ \t]*(.*)$")
_PROMPT_END = re.compile(r"^Here is the task[:.]?[ \t]*$")
_MEMORY = re.compile(r"^Your memory for the task below:[ \t]*$")
_MEMORY_TRIAL = re.compile(r"^Trial \d+:[ \t]*$")
_COMMAND = re.compile(r"^>[ \t]?(.*)$")
_TASK = re.compile(r"^Your task is to:[ \t]*(.*)$")
_STATUS = re.compile(r"^STATUS:[ \t]*(OK|FAIL)[ \t]*$")
_PLAN = re.compile(r"^(?:New|Next) plan:")
_REFUSED = "Nothing happens."


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    if looks_like_json(head):
        if prompt_strings(head) and alfworld_prompts(head):
            return True, "prompt strings holding ALFWorld episodes ('> command', 'Your task is to:')"
        return False, "JSON without ALFWorld prompt strings"
    if alfworld_text(head):
        return True, "'Your task is to:' and '> command' lines"
    return False, "no 'Your task is to:' with '> command' lines"


@dataclass
class _Step:
    command: str
    line: int
    observation: list[str] | None = None  # its lines, joined once at the end


@dataclass
class _Episode:
    task: str = ""
    intro: list[tuple[int, str]] = field(default_factory=list)  # the room, as first described
    steps: list[_Step] = field(default_factory=list)
    status: str = ""
    reflection: list[str] = field(default_factory=list)
    reflection_line: int = 0


@dataclass
class _Block:
    """What one environment (or the whole text) gives: its episodes and what frames them."""

    name: str = ""
    harness: bool = False  # a Reflexion trial log's environment: its stopping rules apply
    prompt: list[tuple[int, str]] = field(default_factory=list)
    memory: list[list[str]] = field(default_factory=list)
    memory_line: int = 0
    episodes: list[_Episode] = field(default_factory=list)
    loose: list[tuple[int, str]] = field(default_factory=list)  # text that is no episode's


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    runs = _Runs(src, result)
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
            lines = text.split("\n")
            runs.add(_block(lines, range(1, len(lines) + 1), str(key)), numbered=False)
    else:
        for block in _blocks(src.text):
            runs.add(block, numbered=True)
    runs.finish()
    result.unread = "no episode ('Your task is to:' and '> command' lines) in it"
    return result


def _blocks(text: str) -> list[_Block]:
    """The text cut at Reflexion's ``#####`` rules; an environment's block is one run."""
    blocks: list[_Block] = []
    lines: list[str] = []
    numbers: list[int] = []

    def close() -> None:
        nonlocal lines, numbers
        start = next((i for i, line in enumerate(lines) if line.strip()), None)
        if start is not None:
            found = _ENVIRONMENT.match(lines[start])
            if found and found.group(2).strip():  # 'Environment #3: Success': not run again
                blocks.append(_Block(loose=[(n, line) for n, line in zip(numbers, lines, strict=True)
                                            if line.strip()]))
            elif found:
                block = _block(lines[start + 1:], numbers[start + 1:], f"environment {found.group(1)}")
                block.harness = True
                blocks.append(block)
            else:
                blocks.append(_block(lines, numbers, ""))
        lines, numbers = [], []

    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if _RULE.match(line):
            close()
            continue
        lines.append(line)
        numbers.append(number)
    close()
    return blocks


def _block(lines: list[str], numbers: Any, name: str) -> _Block:
    block = _Block(name=name)
    end = next((i for i in range(len(lines) - 1, -1, -1) if _PROMPT_END.match(lines[i])), None)
    if end is not None:
        memory = next((i for i in range(end) if _MEMORY.match(lines[i])), end)
        block.prompt = [(numbers[i], lines[i]) for i in range(memory) if lines[i].strip()]
        if memory < end:
            block.memory_line = numbers[memory]
            for line in lines[memory + 1:end]:
                if _MEMORY_TRIAL.match(line):
                    block.memory.append([])
                elif block.memory:
                    block.memory[-1].append(line)
                elif line.strip():
                    block.memory.append([line])
        start = end + 1
    else:
        start = 0
    block.episodes, block.loose = _episodes(lines[start:], numbers[start:])
    return block


def _episodes(lines: list[str], numbers: Any) -> tuple[list[_Episode], list[tuple[int, str]]]:
    """The episodes, and the text that belongs to none (no task, no command in it)."""
    episodes: list[_Episode] = []
    loose: list[tuple[int, str]] = []
    current = _Episode()
    after: list[tuple[int, str]] = []  # lines after a step's observation line, not yet placed
    in_plan = False

    def place_after() -> None:
        """Lines after an observation's first line: more of it, unless a task follows."""
        nonlocal after
        if after and current.steps and current.steps[-1].observation is not None:
            current.steps[-1].observation.extend(line for _, line in after)
        elif after:
            current.intro.extend(after)
        after = []

    def close(intro: list[tuple[int, str]]) -> None:
        nonlocal current
        if current.task or current.steps or current.status:
            episodes.append(current)
        else:
            loose.extend(current.intro)
        current = _Episode(intro=intro)

    for number, line in zip(numbers, lines, strict=True):
        line = line.rstrip("\r")
        if in_plan:
            if line.strip():
                current.reflection.append(line)
                continue
            in_plan = False
        if current.status and line.strip() and not _PLAN.match(line):
            close([])  # after Reflexion's status and reflection: the next episode
        command = _COMMAND.match(line)
        if command:
            place_after()
            current.steps.append(_Step(command.group(1), number))
            continue
        task = _TASK.match(line)
        if task:
            if current.steps or current.task:  # a new episode: the room before it is its own
                room, after = after, []
                place_after()
                close(room)
            current.task = task.group(1)
            continue
        status = _STATUS.match(line)
        if status:
            place_after()
            current.status = status.group(1)
            continue
        if _PLAN.match(line) and current.status:
            current.reflection, current.reflection_line, in_plan = [line], number, True
            continue
        step = current.steps[-1] if current.steps else None
        if step is None:
            if line.strip():
                current.intro.append((number, line))
        elif step.observation is None:
            if line.strip():  # the environment's answer is never blank
                step.observation = [line]
        else:
            after.append((number, line))
    place_after()
    close([])
    return episodes, loose


class _Runs:
    """Makes runs from blocks; keeps what lies between them for the run that follows."""

    def __init__(self, src: Source, result: ImportResult):
        self.src = src
        self.result = result
        self.loose: list[tuple[int, str]] = []
        self.built: tuple[RunBuilder, dict] | None = None
        self.count = 0

    def add(self, block: _Block, numbered: bool) -> None:
        if not block.episodes:
            self.loose.extend(block.prompt + block.loose)
            return
        for count, episode in enumerate(block.episodes, 1):
            self.count += 1
            if block.name:
                name = block.name if len(block.episodes) == 1 else f"{block.name} #{count}"
            else:
                name = f"episode {self.count}"
            self._run(block, episode, name, first=count == 1, numbered=numbered)
        self.loose.extend(block.loose)  # text after the block's episodes: kept for what follows

    def finish(self) -> None:
        if self.built is None:
            if self.loose:
                self.src.problem("no ALFWorld episode in the text")
            return
        builder, ending = self.built
        for first, text in _paragraphs(self.loose):
            builder.raw("alfworld text", text, f"line {first}: {_describe(text)}", current=True)
        self.loose = []
        self.result.runs.append(builder.build(**ending))
        self.result.raw_count += builder.raw_count
        self.built = None

    def _run(self, block: _Block, episode: _Episode, name: str, first: bool, numbered: bool) -> None:
        if self.built is not None:
            loose, self.loose = self.loose, []
            self.finish()
            self.loose = loose
        builder = RunBuilder(episode.task.strip(), name=name, source=self.src.path, tools=TOOLS,
                             policy="recorded: Reflexion ALFWorld run" if block.harness else "ALFWorld example",
                             max_steps=COMMANDS_ALLOWED if block.harness else None)
        where = "line" if numbered else "prompt line"
        for first, text in _paragraphs(self.loose):
            builder.raw("alfworld text", text, f"{where} {first}: {_describe(text)}")
        self.loose = []
        if first and block.prompt:
            text = "\n".join(line for _, line in block.prompt)
            builder.raw("alfworld prompt", text, f"{where}s {block.prompt[0][0]}-{block.prompt[-1][0]}: the "
                        f"prompt's instruction and examples before the task: {preview(text)}")
        if first and block.memory_line:
            items = ["\n".join(parts).strip() for parts in block.memory]
            shown = "; ".join(f"(trial {n}) {item}" for n, item in enumerate(items)) or "none listed"
            builder.raw("reflexion memory", items, f"{where} {block.memory_line}: the reflections on its "
                        f"earlier trials the agent was given: {shown}")
        intro = "\n".join(line for _, line in episode.intro).strip()
        if intro:
            builder.raw("alfworld observation", intro, f"{where} {episode.intro[0][0]}: the room, as the "
                        f"environment first described it: {preview(intro)}")
        for step in episode.steps:
            _add_step(builder, step)
        if episode.reflection:
            reflection = "\n".join(episode.reflection)
            builder.raw("reflexion reflection", reflection, f"{where} {episode.reflection_line}: the agent's "
                        f"reflection on this attempt: {reflection}", current=True)
        self.built = builder, _ending(block, episode, builder)


def _add_step(builder: RunBuilder, step: _Step) -> None:
    observation = "\n".join(step.observation).strip() if step.observation is not None else None
    draft = builder.step(observation=observation)
    written = step.command.strip()
    if written.startswith("think:"):
        draft.thought = written[len("think:"):].strip()
        return
    draft.observation_error = observation == _REFUSED
    if not written:
        draft.output = step.command
        draft.parse_error = "an empty command"
        return
    if written == "go to" or written.startswith("go to "):
        tool, argument = "go to", written[len("go to"):].strip()
    else:
        tool, _, argument = written.partition(" ")
    draft.tool, draft.args, draft.call = tool, argument.strip(), written


def _ending(block: _Block, episode: _Episode, builder: RunBuilder) -> dict[str, Any]:
    ending: dict[str, Any] = {}
    if episode.status:
        ending["verdict"] = {"correct": episode.status == "OK", "score": None, "expected": None,
                             "grader": "STATUS"}
    if episode.status == "OK":
        ending["outcome"] = "finished"
        ending["message"] = "the environment says the task is done (STATUS: OK)"
    elif block.harness and episode.status == "FAIL":
        written = [s.command.strip() for s in episode.steps]
        if len(written) >= 2 and written[-1] == written[-2]:
            ending["outcome"] = "action repeated"
            ending["message"] = f"Reflexion stops an episode that repeats its last command: {written[-1]!r}"
        elif len(written) >= COMMANDS_ALLOWED:
            ending.update(outcome="budget exhausted", guard="max_steps",
                          message=f"step budget exhausted: {len(written)} commands")
    return ending


def _paragraphs(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Loose lines that follow one another, as one text each: (first line, text)."""
    found: list[tuple[int, list[str]]] = []
    last = None
    for number, line in lines:
        if last is not None and number == last + 1:
            found[-1][1].append(line)
        else:
            found.append((number, [line]))
        last = number
    return [(first, "\n".join(texts)) for first, texts in found]


def _describe(text: str) -> str:
    found = _ENVIRONMENT.match(text)
    if found and found.group(2).strip().lower() == "success":
        return f"environment {found.group(1)} was solved in an earlier trial and not run again"
    if "\nSUCCESS: " in text and "\nTOTAL: " in text:
        return f"the trial's summary: {preview(text)}"
    return preview(text)
