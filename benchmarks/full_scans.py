"""Full scans of a million-step trace, each beside its baselines measured in the same run.

  index          open_trace and its whole index (the floor every scan stands on), in a
                 fresh process with the worker processes and with none; the one-process
                 index is the baseline the ratios are taken against
  check          ``check --fail-on error,repeat,budget``'s scan (``agentdbg.trace.scan``:
                 byte-level proof of the plain steps, only the others classified or decoded);
                 and the whole command in a fresh process (with its worker processes, and
                 with none: AGENTDBG_SCAN_WORKERS=0)
  stats          ``stats`` on the same steps written without checkpoints (the fast fold);
                 the whole command in a fresh process, on both traces, and with no workers
  continue       a continue with the automatic breaks from one error to the other, 10
                 steps from each end of a run of quiet steps (as debugger_scan.py)
  regex filter   the same continue with a filter breakpoint ``~obs z+z`` that never matches
  search         transcript search for words and regexes that are not there (regexes without
                 a required word too): in a new session, with the blocks tested in turn
                 (no threads), after the proofs ``/`` makes while a search is typed, and
                 again in the same session; counting every match (``match 3 of 17``), a
                 filter typed into ``/``, a continue with the filter breakpoint
                 ``~obs [0-9]{9}`` and the view filter of the same, each beside
                 ``rg -c -i`` of the regex
  baselines      decoding every step (check, stats: timed on the first --naive-steps steps and
                 scaled; continue: the step-by-step scan it replaces, whole), ripgrep ``rg -c``
                 on the same file (skipped with a note when ``rg`` is missing), and Toolong's
                 open-and-index time when a Python with toolong is given (``--toolong``; it has
                 no headless search, check or stats to compare)

Each figure is wall seconds (CPU seconds in brackets) on the machine as it is: on a shared
machine compare the ratios, which are measured in the same run. Fresh-process figures are
the fastest of three runs (the slowest is shown beside it).

    python benchmarks/full_scans.py [--steps N] [--naive-steps N] [--toolong PYTHON]

Traces go to benchmarks/data/ (gen_trace.py); the quiet one is written here when missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_trace import DATA, NO_CHECKPOINTS, ensure_trace, label  # noqa: E402

from agentdbg.cli import check, render  # noqa: E402
from agentdbg.cli.stats import run_stats  # noqa: E402
from agentdbg.debugger.breakpoints import BreakpointSet  # noqa: E402
from agentdbg.debugger.candidates import THREADS_VARIABLE, prove_ahead  # noqa: E402
from agentdbg.debugger.filters import parse_filter  # noqa: E402
from agentdbg.debugger.find import Query, find_step, matching_steps  # noqa: E402
from agentdbg.debugger.session import DebugSession  # noqa: E402
from agentdbg.debugger.view import scan_view  # noqa: E402
from agentdbg.engine import events as ev  # noqa: E402
from agentdbg.state import RunState, Tally  # noqa: E402
from agentdbg.trace import workers  # noqa: E402
from agentdbg.trace.reader import open_trace  # noqa: E402
from agentdbg.trace.workers import WORKERS_VARIABLE  # noqa: E402
from agentdbg.trace.writer import write_trace  # noqa: E402

SHARED_TOOLONG = HERE.parent.parent / "shared" / "bench" / "toolong_open.py"


def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def row(name: str, wall: float, cpu: float | None, note: str = "") -> None:
    spent = f"{wall:8.2f} s" + (f" ({cpu:6.2f} s CPU)" if cpu is not None else " " * 16)
    print(f"  {name:<44} {spent}  {note}")


def quiet_events(steps: int):
    """debugger_scan.py's run: quiet steps, a tool error 10 steps from each end."""
    yield ev.RunStart(step=0, task="add numbers", tools=[{"name": "calc", "params": {"expression": "str"}}],
                      guards={"max_steps": None}, name="quiet")
    errors_at = {10, steps - 10}
    for n in range(1, steps + 1):
        yield ev.StepStart(step=n)
        yield ev.Thought(step=n, text=f"Step {n}: I add one more to the running total.")
        yield ev.ActionTaken(step=n, tool="calc", args=f"{n} + 1", call=f"calc[{n} + 1]")
        if n in errors_at:
            yield ev.StepError(step=n, kind="exception", message="ZeroDivisionError", tool="calc")
            yield ev.Observation(step=n, text="ERROR: ZeroDivisionError", error=True)
        else:
            yield ev.Observation(step=n, text=str(n + 1))
        yield ev.GuardCounters(step=n, steps=[n, None], repeats=[1, None], errors=[0, None],
                               tokens=[n * 40, None], step_tokens=40)
    yield ev.RunEnd(step=steps, outcome="script exhausted", steps=steps)


def quiet_trace(steps: int) -> Path:
    path = DATA / f"trace_{label(steps)}_quiet.jsonl"
    if not path.exists():
        print(f"writing {path} ...", file=sys.stderr, flush=True)
        DATA.mkdir(parents=True, exist_ok=True)
        write_trace(path, [quiet_events(steps)])
    return path


def opened(path: Path):
    document = open_trace(path)
    document.wait()
    return document


def rg(args: list[str]) -> tuple[float, float] | None:
    """ripgrep's wall and CPU seconds, or None when it is not installed."""
    if shutil.which("rg") is None:
        return None
    started = time.perf_counter()
    process = subprocess.Popen(["rg", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


RUNS = 3  # fresh-process figures: the fastest and slowest of this many runs


def fresh(argv: list[str], workers: int | None = None) -> tuple[float, float, float]:
    """Fastest and slowest wall seconds, and the fastest run's CPU seconds (its worker
    processes' included), of ``python ARGV`` started afresh ``RUNS`` times; ``workers``:
    the worker processes (default: as a user gets them; 0: none)."""
    env = dict(os.environ)
    if workers is not None:
        env[WORKERS_VARIABLE] = str(workers)
    runs = []
    for _ in range(RUNS):
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=env)
        _, _, usage = os.wait4(process.pid, 0)
        runs.append((time.perf_counter() - started, usage.ru_utime + usage.ru_stime))
    return min(runs)[0], max(runs)[0], min(runs)[1]


def fresh_row(name: str, argv: list[str], workers: int | None = None, against: float | None = None) -> float:
    fastest, slowest, cpu = fresh(argv, workers)
    note = f"slowest {slowest:.2f} s" + (f"; {fastest / against:4.1f}x the one-process index" if against else "")
    row(name, fastest, cpu, note)
    return fastest


def command(*argv: str) -> list[str]:
    return ["-m", "agentdbg", *argv]


def index_only(path: Path) -> list[str]:
    """Open and index ``path`` in a fresh process, with the worker processes a headless
    command would have (``workers.enable()``; ``AGENTDBG_SCAN_WORKERS=0``: none)."""
    return ["-c", "from agentdbg.trace import workers; workers.enable(); "
                  f"from agentdbg.trace.reader import open_trace; open_trace({str(path)!r}).wait()"]


def continue_from(run, breakpoints: BreakpointSet, step_by_step: bool = False) -> str:
    session = DebugSession(run, breakpoints)
    session.goto(10)
    if step_by_step:  # the scan as it was: each step's bytes read and tested alone
        session._block_test = lambda: None
    return session.continue_forward().message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--naive-steps", type=int, default=50_000,
                        help="steps decoded for the full-decode baselines, scaled to the whole run")
    parser.add_argument("--toolong", metavar="PYTHON", help="a Python with toolong installed (its open time)")
    args = parser.parse_args()
    workers.enable()  # (as the headless commands do: the in-process scans below may use them)
    steps = args.steps
    path = ensure_trace(steps)
    bare = ensure_trace(steps, checkpoint_every=NO_CHECKPOINTS)
    quiet = quiet_trace(steps)
    size = path.stat().st_size / 1e6
    load = os.getloadavg()[0]
    print(f"{steps:,} steps, {size:.0f} MB ({path.name}); load average {load:.1f} on {os.cpu_count()} CPUs")

    print(f"index (fresh processes: fastest of {RUNS}, CPU of the workers included)")
    index_alone = fresh_row("baseline: open_trace + whole index, one process", index_only(path), workers=0)
    fresh_row("open_trace + whole index, with the workers", index_only(path), against=index_alone)
    index_wall, index_cpu, document = timed(lambda: opened(path))
    row("in this process (the scans below start here)", index_wall, index_cpu)

    print("check --fail-on error,repeat,budget")
    names = check.parse_fail_on(check.DEFAULT_FAIL_ON)
    options = argparse.Namespace(max_report=10, run=None, max_runs=20_000)
    wall, cpu, result = timed(lambda: check._check(document, names, options))
    counts = result["runs"][0]["counts"]
    row("scan (after the index)", wall, cpu, f"{wall / index_alone:4.1f}x the one-process index   {counts}")
    check_wall = wall
    argv = command("check", str(path), "--fail-on", ",".join(names))
    fresh_row("whole command, fresh process", argv, against=index_alone)
    fresh_row("baseline: whole command, one process", argv, workers=0, against=index_alone)
    run = document.runs[0]
    sample = min(args.naive_steps, run.step_count)
    tests = [check.CONDITIONS[name].step for name in names]

    def decode_sample():
        for record in render.iter_records(run, 1, sample):
            for test in tests:
                test(record)

    naive_wall, naive_cpu, _ = timed(decode_sample)
    scale = run.step_count / sample
    row(f"baseline: every step decoded ({sample:,}, scaled)", naive_wall * scale, naive_cpu * scale,
        f"fast is {naive_wall * scale / check_wall:5.1f}x faster")
    document.close()

    print("stats (no checkpoints)")
    bare_document = opened(bare)
    bare_run = bare_document.runs[0]
    wall, cpu, figures = timed(lambda: run_stats(1, bare_run))
    row("fast fold (after the index)", wall, cpu, f"{wall / index_alone:4.1f}x the one-process index   errors {figures['errors']:,}")
    stats_wall = wall
    fresh_row("whole command, fresh process", command("stats", str(bare)), against=index_alone)
    fresh_row("baseline: whole command, one process", command("stats", str(bare)), workers=0, against=index_alone)
    fresh_row("whole command, with checkpoints", command("stats", str(path)), against=index_alone)

    def fold_sample():
        tally = Tally.from_state(RunState.initial(bare_run.info))
        for record in render.iter_records(bare_run, 1, sample):
            tally.add(record)

    naive_wall, naive_cpu, _ = timed(fold_sample)
    row(f"baseline: every step decoded ({sample:,}, scaled)", naive_wall * scale, naive_cpu * scale,
        f"fast is {naive_wall * scale / stats_wall:5.1f}x faster")
    bare_document.close()

    print("continue (automatic breaks), quiet run")
    quiet_document = opened(quiet)
    quiet_run = quiet_document.runs[0]
    wall, cpu, message = timed(lambda: continue_from(quiet_run, BreakpointSet()))
    row("continue, a block at a time", wall, cpu, f"{wall / index_wall:4.1f}x the index ({cpu / index_cpu:.1f}x in CPU)   {message[:40]}")
    old_wall, old_cpu, _ = timed(lambda: continue_from(quiet_run, BreakpointSet(), step_by_step=True))
    row("baseline: step by step (bytes of each step)", old_wall, old_cpu, f"fast is {old_wall / wall:5.1f}x faster")
    regex_filter = BreakpointSet()
    regex_filter.add("filter", "~obs z+z")
    wall, cpu, message = timed(lambda: continue_from(quiet_run, regex_filter))
    row("continue with ~obs z+z", wall, cpu, message[:40])
    quiet_document.close()

    print("search (no match), and ripgrep on the same file")
    document = opened(path)
    run = document.runs[0]

    def against_rg(text: str, wall: float, cpu: float, full: bool = False) -> str:
        grep = rg(["-c", "-i", text, str(path)])
        if grep is None:
            return "rg not installed (apt-get install ripgrep): skipped"
        said = f"rg -c -i {text}: {grep[0]:.2f} s ({grep[1]:.2f} s CPU), " if full else ""
        return f"{said}{wall / grep[0]:4.1f}x rg ({cpu / grep[1]:.1f}x in CPU)"

    # Words, then regexes without a required word: a literal set (qx|zq, colou?r|hue) or
    # a relaxed byte regex ([0-9]{9}, x.y, \d{4}-\d{2}). Smart case: rg -i alike. A new
    # session each time: nothing proven before.
    for text in ("zzz", "not.there", "qx|zq", "(?i)colou?r|hue", "[0-9]{9}", "x.y", "\\d{4}-\\d{2}"):
        wall, cpu, found = timed(lambda text=text: DebugSession(run).search(text, wrap=False))
        row(f"search {text!r}" + ("" if found is None else f" (found {found}!)"), wall, cpu,
            against_rg(text, wall, cpu, full=True))
    os.environ[THREADS_VARIABLE] = "0"
    wall, cpu, _ = timed(lambda: DebugSession(run).search("\\d{4}-\\d{2}", wrap=False))
    del os.environ[THREADS_VARIABLE]
    row("baseline: search '\\d{4}-\\d{2}', blocks tested in turn", wall, cpu, against_rg("\\d{4}-\\d{2}", wall, cpu))
    # In the debugger, / proves the steps while the search is typed (candidates.prove_ahead).
    for text in ("[0-9]{9}", "x.y", "\\d{4}-\\d{2}"):
        session = DebugSession(run)
        proving, proving_cpu, _ = timed(lambda session=session: prove_ahead(run, session.proofs))
        wall, cpu, found = timed(lambda text=text, session=session: session.search(text, wrap=False))
        row(f"search {text!r} after / proved the steps", wall, cpu,
            f"{against_rg(text, wall, cpu)}   (proving: {proving:.2f} s, {proving_cpu:.2f} s CPU)")
    # A session keeps what its scans proved of each step (the next search, n).
    session = DebugSession(run)
    session.search("not.there", wrap=False)
    session.search("x.y", wrap=False)
    for text in ("[0-9]{9}", "x.y", "\\d{4}-\\d{2}"):
        wall, cpu, found = timed(lambda text=text: session.search(text, wrap=False))
        row(f"search {text!r} again, same session", wall, cpu, against_rg(text, wall, cpu))
    # "match 3 of 17": every match counted, in the debugger behind the match shown (after
    # the proofs / made while the search was typed; the first row: nothing proven).
    print("counting every match (rg -c -i is the same count)")
    wall, cpu, steps = timed(lambda: matching_steps(run, Query.parse("catalog\\[4969\\]")))
    row(f"count 'catalog\\[4969\\]': {len(steps):,} steps, nothing proven", wall, cpu,
        against_rg("catalog\\[4969\\]", wall, cpu))
    proven = DebugSession(run).proofs
    prove_ahead(run, proven)
    for text in ("catalog\\[4969\\]", "\\d{4}-\\d{2}", "Ask calc"):
        wall, cpu, steps = timed(lambda text=text: matching_steps(run, Query.parse(text), proofs=proven))
        note = "   (each match decoded to be sure)" if len(steps) > 1000 else ""
        row(f"count {text!r}: {len(steps):,} steps", wall, cpu, against_rg(text, wall, cpu) + note)
    wall, cpu, found = timed(lambda: find_step(run, Query.parse("~obs [0-9]{9}"), 0, wrap=False))
    row("/ with a filter: ~obs [0-9]{9}" + ("" if found is None else f" (found {found}!)"), wall, cpu,
        against_rg("[0-9]{9}", wall, cpu))
    only_filter = BreakpointSet()
    for code in only_filter.auto:
        only_filter.auto[code] = False
    only_filter.add("filter", "~obs [0-9]{9}")
    wall, cpu, message = timed(lambda: continue_from(run, only_filter))
    grep = rg(["-c", "-i", "[0-9]{9}", str(path)])
    row("continue with ~obs [0-9]{9} (no match)", wall, cpu,
        f"{wall / grep[0]:4.1f}x rg   {message[:36]}" if grep else message[:40])
    view_filter = parse_filter("~obs [0-9]{9}")
    wall, cpu, view = timed(lambda: scan_view(run, "~obs [0-9]{9}", view_filter))
    shown = view.describe() if view is not None else "cancelled"
    row("view filter ~obs [0-9]{9} (f)", wall, cpu, f"{wall / grep[0]:4.1f}x rg   {shown}" if grep else shown)
    matches = view_filter.matches

    def decode_sample_filter():  # the continue and the view as they were: no byte test for this regex
        for record in render.iter_records(run, 1, sample):
            matches(record)

    naive_wall, naive_cpu, _ = timed(decode_sample_filter)
    row(f"baseline: every step decoded ({sample:,}, scaled)", naive_wall * scale, naive_cpu * scale,
        f"fast is {naive_wall * scale / wall:5.1f}x faster")
    document.close()

    print("Toolong (a log viewer; no headless search, check or stats: its open and index)")
    if args.toolong and SHARED_TOOLONG.exists():
        started = time.perf_counter()
        out = subprocess.run([args.toolong, str(SHARED_TOOLONG), str(path)], capture_output=True, text=True,
                             check=False, timeout=600)
        print(f"  {out.stdout.strip() or out.stderr.strip()[-200:]} ({time.perf_counter() - started:.1f} s)")
    else:
        print("  skipped: give --toolong PYTHON (a virtual environment with toolong: it pins an older Textual)"
              + ("" if SHARED_TOOLONG.exists() else f"; {SHARED_TOOLONG} is missing"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
