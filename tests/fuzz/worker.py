"""A corpus worker: reads requests (JSON lines) on stdin, answers on stdout.

``{"op": "record", "argv": [...]}`` runs ``agentdbg`` with those arguments;
``{"op": "case", "id": ..., "tui": bool}`` builds that case in an empty directory, runs
every command on it (and the debugger when asked) and answers with what went wrong.
Started by ``fuzz.runner`` with a low priority: other work on the machine comes first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the fuzz package

from fuzz import classify, corpus, execute  # noqa: E402
from fuzz import tui as tui_driver  # noqa: E402

OUTPUT_LIMIT = 64 << 20  # bytes of a command's output searched for escapes
# Settings that would make a piped command colour its output anyway.
FORCING_VARIABLES = ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                     "COLUMNS", "LINES")


def _preload() -> None:
    """Everything a command imports, imported once here so each forked child starts warm."""
    import agentdbg.cli.check  # noqa: F401
    import agentdbg.cli.convert  # noqa: F401
    import agentdbg.cli.debug  # noqa: F401
    import agentdbg.cli.fork  # noqa: F401
    import agentdbg.cli.record  # noqa: F401
    import agentdbg.cli.show  # noqa: F401
    import agentdbg.cli.stats  # noqa: F401
    import agentdbg.importers  # noqa: F401
    import agentdbg.trace.reader  # noqa: F401
    import agentdbg.tui.app  # noqa: F401


def _agentdbg(argv: list[str]):
    def target() -> int:
        from agentdbg.cli import main
        return main(argv)
    return target


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(OUTPUT_LIMIT)
    except OSError:
        return b""


def _clear(directory: Path) -> None:
    """Remove a case directory whatever the case did to permissions inside it."""
    def open_up(path: str) -> None:
        os.chmod(path, 0o700)
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                open_up(entry.path)

    if not os.path.lexists(directory):
        return
    try:
        open_up(str(directory))
    except OSError:
        pass
    shutil.rmtree(directory, ignore_errors=True)


class Worker:
    def __init__(self, base: Path, scratch: Path, timeout: float, tui_timeout: float):
        self.base, self.scratch, self.timeout, self.tui_timeout = base, scratch, timeout, tui_timeout
        self._cases: dict | None = None

    def case(self, case_id: str):
        if self._cases is None:
            self._cases = {case.id: case for case in corpus.build(self.base)}
        return self._cases[case_id]

    def record(self, argv: list[str]) -> dict:
        step = execute.Step(_agentdbg(argv), argv, self.timeout * 3, self.scratch / "record.out",
                            self.scratch / "record.err")
        [outcome] = execute.run_in_sequence([step], self.scratch)
        return {"exit": outcome.exit_code, "stderr": _read(step.stderr_path).decode("utf-8", "replace")[-2000:]}

    def run_case(self, case_id: str, with_tui: bool) -> dict:
        started = time.monotonic()
        case = self.case(case_id)
        directory, outputs = self.scratch / "case", self.scratch / "out"
        _clear(directory)
        shutil.rmtree(outputs, ignore_errors=True)
        directory.mkdir()
        outputs.mkdir()
        if case.unprivileged:
            os.chmod(directory, 0o777)
        case.make(directory)
        limit = self.timeout * (3 if case.slow else 1)
        report = outputs / "tui-screen.txt"
        runs: list[tuple[str, float]] = []
        steps: list[execute.Step] = []
        for number, name in enumerate(execute.COMMANDS):
            argv = execute.command_argv(name, case.name, case.args)
            steps.append(execute.Step(_agentdbg(argv), argv, limit, outputs / f"{number}.out", outputs / f"{number}.err"))
            runs.append((name, limit))
        for number, command in enumerate(case.commands, len(steps)):
            argv = [part.replace("{file}", case.name) for part in command]
            steps.append(execute.Step(_agentdbg(argv), argv, limit, outputs / f"{number}.out", outputs / f"{number}.err"))
            runs.append((" ".join(part.replace("{file}", "FILE") for part in command), limit))
        headless = len(steps)
        if with_tui:
            argv = [case.name, *case.args]
            steps.append(execute.Step(lambda: tui_driver.run(argv, case.tui_keys, report), argv, self.tui_timeout,
                                      outputs / "tui.out", outputs / "tui.err"))
            runs.append(("tui", self.tui_timeout))
        if case.blocking:  # each may block: all side by side
            outcomes = execute.run_side_by_side(steps, directory, unprivileged=case.unprivileged)
        else:
            outcomes = execute.run_in_sequence(steps[:headless], directory, unprivileged=case.unprivileged)
            if with_tui:  # the debugger in a process of its own: it leaves more behind
                outcomes += execute.run_side_by_side(steps[headless:], directory, unprivileged=case.unprivileged)
        findings: list[classify.Finding] = []
        summary = []
        for (name, seconds), step, outcome in zip(runs, steps, outcomes, strict=True):
            stdout, stderr = _read(step.stdout_path), _read(step.stderr_path)
            command = "agentdbg FILE (debugger)" if name == "tui" else f"agentdbg {name}"
            findings += classify.classify(command, exit_code=outcome.exit_code, signal_number=outcome.signal_number,
                                          timed_out=outcome.timed_out, timeout=seconds,
                                          cpu_seconds=outcome.cpu_seconds, stdout=stdout, stderr=stderr,
                                          stuck=outcome.stuck, seconds=outcome.seconds)
            if name == "tui":
                if not outcome.timed_out:
                    findings += classify.tui_exit(command, outcome.exit_code, stderr)
                findings += _screen_findings(command, report)  # what was seen, up to a hang too
            summary.append({"command": name, "exit": outcome.exit_code, "seconds": round(outcome.seconds, 3),
                            "cpu": round(outcome.cpu_seconds, 3), "timed_out": outcome.timed_out})
        if case.after is not None:
            problem = case.after(directory)
            if problem:
                findings.append(classify.Finding("other", "after every command", problem, f"other|{problem}"))
        _clear(directory)
        shutil.rmtree(outputs, ignore_errors=True)
        return {"id": case_id, "runs": summary, "findings": [finding.to_dict() for finding in findings],
                "seconds": round(time.monotonic() - started, 3)}


def _screen_findings(command: str, report: Path) -> list[classify.Finding]:
    findings = []
    if report.exists():
        for line in report.read_text(encoding="utf-8").splitlines():
            cls, _, detail = line.partition("\t")
            kind = "other" if cls == "still running" else "escape"
            findings.append(classify.Finding(kind, command, detail, f"{kind}|screen|{cls}"))
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--scratch", required=True, type=Path)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--tui-timeout", type=float, default=30.0)
    parser.add_argument("--nice", type=int, default=10)
    args = parser.parse_args()
    if args.nice:
        os.nice(args.nice)
    for name in FORCING_VARIABLES:
        os.environ.pop(name, None)
    _preload()
    args.scratch.mkdir(parents=True, exist_ok=True)
    os.chmod(args.scratch, 0o755)
    worker = Worker(args.base, args.scratch, args.timeout, args.tui_timeout)
    protocol = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "record":
                answer = worker.record(request["argv"])
            else:
                answer = worker.run_case(request["id"], request.get("tui", False))
        except Exception as exc:  # the harness's own failure: said, never hidden
            import traceback

            answer = {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}",
                      "traceback": traceback.format_exc()[-3000:]}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
