"""Run cases on a few low-priority workers and gather what went wrong.

``Pool.prepare()`` records the starting traces with ``agentdbg record`` and builds the
corpus; ``Pool.run(cases)`` hands each case to the next free worker and returns a
``Report``; ``summary`` and ``failures`` format it: one line of figures, then each
distinct failure with how often it happened and where.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fuzz import corpus
from fuzz.cases import Case
from fuzz.classify import UNSAFE, Finding
from fuzz.execute import COMMANDS

WORKER = Path(__file__).resolve().parent / "worker.py"


@dataclass
class Failure:
    case: str
    category: str
    input_kind: str
    finding: Finding


@dataclass
class Report:
    cases: int = 0
    done: int = 0  # cases run so far
    tried: int = 0  # command runs
    failures: list[Failure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the harness's own problems
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # used by the commands
    case_seconds: dict[str, float] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return sum(1 for failure in self.failures if failure.finding.kind == kind)


class _Process:
    def __init__(self, number: int, work: Path, timeout: float, tui_timeout: float, nice: int):
        self.number = number
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), "--base", str(work / "base"), "--scratch", str(work / f"worker{number}"),
             "--timeout", str(timeout), "--tui-timeout", str(tui_timeout), "--nice", str(nice)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)
        self.busy_with: dict | None = None

    def send(self, request: dict) -> None:
        self.busy_with = request
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Pool:
    """Low-priority worker processes (``fuzz/worker.py``) sharing a work directory:
    ``work/base`` holds the recorded traces, each worker has its own scratch directory.
    Use as a context manager: leaving it stops the workers (at once when interrupted)."""

    def __init__(self, work: Path, *, jobs: int = 2, timeout: float = 20.0, tui_timeout: float = 30.0,
                 nice: int = 10):
        self.work, self.jobs, self.timeout, self.tui_timeout, self.nice = work, max(1, jobs), timeout, tui_timeout, nice
        self.workers: list[_Process] = []
        self._started = 0
        self._selector = selectors.DefaultSelector()

    def __enter__(self) -> Pool:
        (self.work / "base").mkdir(parents=True, exist_ok=True)
        os.chmod(self.work, 0o755)
        return self

    def __exit__(self, kind, value, trace) -> None:
        if kind is not None:  # interrupted: stop now, not after the cases under way
            for worker in self.workers:
                worker.process.terminate()
        for worker in self.workers:
            worker.close()
        self._selector.close()

    def _spawn(self) -> _Process:
        worker = _Process(self._started, self.work, self.timeout, self.tui_timeout, self.nice)
        self._started += 1
        self.workers.append(worker)
        self._selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
        return worker

    def map(self, requests: list[dict], on_answer: Callable[[dict, dict], None],
            on_error: Callable[[dict, str], None]) -> None:
        """Send each request to the next free worker; a worker that dies is replaced."""
        queue = list(reversed(requests))
        while len(self.workers) < min(self.jobs, len(requests)):
            self._spawn()
        for worker in self.workers:
            worker.busy_with = None
            if queue:
                worker.send(queue.pop())
        while any(worker.busy_with is not None for worker in self.workers):
            for key, _ in self._selector.select(timeout=1.0):
                worker: _Process = key.data
                line = worker.process.stdout.readline()
                request = worker.busy_with
                if not line:  # the worker died: say so, start another
                    self._selector.unregister(worker.process.stdout)
                    self.workers.remove(worker)
                    worker.close()
                    if request is not None:
                        on_error(request, f"worker exited with {worker.process.returncode}")
                    worker = self._spawn()
                else:
                    on_answer(request, json.loads(line))
                worker.busy_with = None
                if queue:
                    worker.send(queue.pop())

    def prepare(self) -> list[Case]:
        """Record the starting traces into ``work/base`` and build the corpus from them."""
        base = self.work / "base"
        problems: list[str] = []

        def answered(request: dict, answer: dict) -> None:
            if answer.get("exit") != 0:
                problems.append(f"agentdbg {' '.join(request['argv'])}: exit {answer.get('exit')}: "
                                f"{answer.get('stderr') or answer.get('error')}")

        requests = [{"op": "record", "argv": argv} for argv in corpus.record_commands(base)]
        self.map(requests, answered, lambda request, error: problems.append(error))
        if problems:
            raise RuntimeError("recording the starting traces failed:\n" + "\n".join(problems))
        return corpus.build(base)

    def run(self, cases: list[Case], *, tui: set[str],
            progress: Callable[[Report, int], None] | None = None) -> Report:
        """Run every command on every case (and the debugger on the cases in ``tui``)."""
        report = Report(cases=len(cases))
        by_id = {case.id: case for case in cases}
        started = time.monotonic()
        last_progress = started

        def answered(request: dict, answer: dict) -> None:
            nonlocal last_progress
            case = by_id[request["id"]]
            report.done += 1
            if "error" in answer:
                report.errors.append(f"{case.id}: {answer['error']}\n{answer.get('traceback', '')}")
                return
            report.tried += len(answer["runs"])
            report.cpu_seconds += sum(run.get("cpu", 0.0) for run in answer["runs"])
            report.case_seconds[case.id] = answer.get("seconds", 0.0)
            for item in answer["findings"]:
                report.failures.append(Failure(case.id, case.category, case.kind, Finding(**item)))
            if progress is not None and time.monotonic() - last_progress >= 10:
                last_progress = time.monotonic()
                report.seconds = last_progress - started
                progress(report, len(cases))

        def failed(request: dict, error: str) -> None:
            report.done += 1
            report.errors.append(f"{request.get('id')}: {error}")

        requests = [{"op": "case", "id": case.id, "tui": case.id in tui} for case in cases]
        self.map(requests, answered, failed)
        report.seconds = time.monotonic() - started
        return report


# -- reporting -------------------------------------------------------------------------------


def visible(text: str) -> str:
    """``text`` with every character a terminal would act on written as an escape: case
    details quote what the commands printed, and must not do to the reader what they caught."""
    return UNSAFE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def summary(report: Report) -> str:
    line = (f"{report.done} cases tried / {report.tried} command runs / {report.count('traceback')} tracebacks / "
            f"{report.count('hang')} hangs / {report.count('escape')} escape leaks")
    if report.count("other"):
        line += f" / {report.count('other')} other"
    return line


def failures(report: Report, *, examples: int = 3, every: bool = False) -> list[str]:
    """Each distinct failure once (a traceback: same exception, same place; a hang or an
    escape: same symptom on the same category of input), with the commands it happened
    in, how often, on which input kinds, a few case ids; ``every`` lists every failure too."""
    groups: dict[tuple, list[Failure]] = defaultdict(list)
    for failure in report.failures:
        finding = failure.finding
        where = "" if finding.kind == "traceback" else failure.category
        groups[(finding.signature, where, finding.command.endswith("(debugger)"))].append(failure)
    order = {kind: number for number, kind in enumerate(("traceback", "hang", "other", "escape"))}
    every_command = {f"agentdbg {name}" for name in COMMANDS}
    lines = []
    ranked = sorted(groups.items(), key=lambda item: (order[item[1][0].finding.kind], -len(item[1]), item[0]))
    for _, group in ranked:
        first = group[0].finding
        commands = sorted({failure.finding.command for failure in group})
        shown_commands = "every headless command" if set(commands) == every_command else ", ".join(commands)
        cases: dict[str, Failure] = {}
        for failure in group:
            cases.setdefault(failure.case, failure)
        kinds: dict[str, int] = defaultdict(int)
        for failure in cases.values():
            kinds[f"{failure.category}:{failure.input_kind}"] += 1
        ranked_kinds = sorted(kinds.items(), key=lambda item: (-item[1], item[0]))
        shown_kinds = ", ".join(f"{kind} ({count})" for kind, count in ranked_kinds[:6])
        if len(kinds) > 6:
            shown_kinds += f", and {len(kinds) - 6} more kinds"
        lines.append(visible(f"[{first.kind}] {shown_commands}: {first.detail}"))
        lines.append(f"    {len(group)} runs in {len(cases)} cases; inputs: {shown_kinds}")
        for case in list(cases)[:examples]:
            lines.append(visible(f"    e.g. {case}"))
    if every:
        lines.append("")
        lines.append("every failure (case, command, problem):")
        for failure in report.failures:
            lines.append(visible(f"  {failure.case}  |  {failure.finding.command}  |  {failure.finding.detail}"))
    return lines
