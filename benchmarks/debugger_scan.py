"""How fast continue, reverse-continue and search scan a long run.

Builds a synthetic run of STEPS steps from the engine's event types (thought, action,
observation, guard counters; a tool error 10 steps from each end), then times, in the same
process:

  baseline        reading every step record (the least any scan must do)
  continue        continue_forward with the automatic breaks on, from one error to the other
  continue+user   the same with a step, a tool and a filter breakpoint that never match
  continue+regex  the same with a filter whose regex needs every step decoded
  reverse         continue_back from the second error to the first
  search          transcript search for a word, and for a regex, that are not there
  file ...        the same scans over a trace file (when the trace reader is available),
                  and again with the run handing out raw step lines (``step_bytes``)

and prints steps/second and the ratio to the baseline. No assertion: a figure to watch.

    python benchmarks/debugger_scan.py [STEPS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from agentdbg.debugger.breakpoints import BreakpointSet
from agentdbg.debugger.session import DebugSession
from agentdbg.engine import events as ev
from agentdbg.runs import EventRun


def synthetic_events(steps: int) -> list[ev.Event]:
    events: list[ev.Event] = [ev.RunStart(step=0, task="add numbers", tools=[{"name": "calc", "params": {"expression": "str"}}],
                                          guards={"max_steps": None}, name="synthetic")]
    errors_at = {10, steps - 10}
    for n in range(1, steps + 1):
        events.append(ev.StepStart(step=n))
        events.append(ev.Thought(step=n, text=f"Step {n}: I add one more to the running total."))
        events.append(ev.ActionTaken(step=n, tool="calc", args=f"{n} + 1", call=f"calc[{n} + 1]"))
        if n in errors_at:
            events.append(ev.StepError(step=n, kind="exception", message="ZeroDivisionError", tool="calc"))
            events.append(ev.Observation(step=n, text="ERROR: ZeroDivisionError", error=True))
        else:
            events.append(ev.Observation(step=n, text=str(n + 1)))
        events.append(ev.GuardCounters(step=n, steps=[n, None], repeats=[1, None], errors=[0, None],
                                       tokens=[n * 40, None], step_tokens=40))
    events.append(ev.RunEnd(step=steps, outcome="script exhausted", steps=steps))
    return events


def timed(label: str, steps: int, work, baseline: float | None = None) -> float:
    start = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - start
    rate = steps / seconds if seconds else float("inf")
    ratio = f"  {seconds / baseline:6.2f}x baseline" if baseline else " " * 18
    print(f"{label:<26} {seconds:8.3f} s {rate:>12,.0f} steps/s{ratio}   {result}")
    return seconds


def user_breakpoints() -> BreakpointSet:
    breakpoints = BreakpointSet()
    breakpoints.add("step", 10**9)
    breakpoints.add("tool", "web_search")
    breakpoints.add("filter", "~obs zzz & ~step >5 | ~tool loans")
    return breakpoints


def regex_breakpoint() -> BreakpointSet:
    """A filter no byte test can rule a step out for: every step is decoded."""
    breakpoints = BreakpointSet()
    breakpoints.add("filter", "~obs z+z")
    return breakpoints


def scans(label: str, run, steps: int) -> None:
    first, last = 10, run.step_count - 10
    span = last - first

    def read_all():
        for n in range(first + 1, last + 1):
            run.record(n)
        return f"read {span:,} records"

    base = timed(f"{label}baseline", span, read_all)

    def forward(breakpoints):
        session = DebugSession(run, breakpoints)
        session.goto(first)
        return session.continue_forward().message

    def backward(session):
        return session.continue_back().message

    at_last = DebugSession(run)
    at_last.goto(last)
    timed(f"{label}continue", span, lambda: forward(BreakpointSet()), base)
    timed(f"{label}continue+user", span, lambda: forward(user_breakpoints()), base)
    timed(f"{label}reverse", span, lambda: backward(at_last), base)
    timed(f"{label}continue+regex", span, lambda: forward(regex_breakpoint()), base)
    timed(f"{label}search word", steps, lambda: DebugSession(run).search("zzz", wrap=False), base)
    timed(f"{label}search regex", steps, lambda: DebugSession(run).search("not.there", wrap=False), base)


def write_trace(events: list[ev.Event], path: Path) -> None:
    try:
        from agentdbg.trace.writer import write_trace as write  # with checkpoints, as recorded
    except ImportError:
        write = None
    if write is not None:
        write(path, [events])
        return
    from agentdbg.trace import format as fmt

    with open(path, "w", encoding="utf-8") as out:
        out.write(fmt.header_line())
        for event in events:
            out.write(fmt.event_line(event))


def _can_shim(run) -> bool:
    return hasattr(run, "_span") and hasattr(getattr(run, "_source", None), "pread")


def _raw_lines(run, step: int) -> bytes:
    start, end = run._span(step)
    return run._source.pread(end - start, start)


def main() -> int:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    start = time.perf_counter()
    events = synthetic_events(steps)
    run = EventRun(events)
    print(f"{steps:,} steps, {len(events):,} events, built in {time.perf_counter() - start:.2f} s")
    scans("", run, steps)
    try:
        from agentdbg.trace import reader
    except ImportError:
        reader = None
    if not hasattr(reader, "open_trace"):
        print("file scans skipped: agentdbg.trace.reader.open_trace is not available")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "synthetic.trace"
        write_trace(events, path)
        document = reader.open_trace(path)
        try:
            file_run = document.runs[0]
            wait_until = time.perf_counter() + 120
            while not file_run.complete and time.perf_counter() < wait_until:
                time.sleep(0.05)
            scans("file ", file_run, steps)
            if not callable(getattr(file_run, "step_bytes", None)) and _can_shim(file_run):
                # What a continue gains once the reader hands out each step's raw lines.
                print("file run has no step_bytes(); measured with a stand-in built on the reader's internals:")
                file_run.step_bytes = lambda step: _raw_lines(file_run, step)
                scans("file+bytes ", file_run, steps)
        finally:
            document.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
