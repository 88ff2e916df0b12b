"""How soon a step written to a trace shows in the debugger that follows it.

Another process writes a run with the real trace writer (holding its lock, as a recording
does), one step every ~150 ms (jittered, so the figures do not lock onto a poll interval),
and says when each step's last line was written. Three observers follow the same kind of
run, one after the other, each timing when step N became visible to it:

  file size   a thread stat()s the file every millisecond and reads what was appended:
              when a step's last line is there at all (the floor: a plain poll, nothing
              can show a step sooner)
  reader      open_trace(follow=True), a thread looking at run.step_count every millisecond:
              when the reader counts the step as whole
  screen      the debugger (Textual's headless pilot) following the trace: when its timeline
              is given the new step count (the view updated; painting follows in the same
              frame)

Prints the median, p95 and worst latency of each, write to visible, and the screen's
overhead over the reader. No assertion: figures to watch (the target is a median of at
most 100 ms on screen).

    python benchmarks/live_latency.py [--steps 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

# Writes a run to argv[1]: run_start, "ready", then (after a line on stdin) argv[2] steps,
# printing "STEP MONOTONIC" once each is written; "done" at the end.
WRITER = r"""
import random, sys, time
from agentdbg.engine import events as ev
from agentdbg.trace.writer import TraceWriter

path, steps = sys.argv[1], int(sys.argv[2])
random.seed(7)
with TraceWriter(path, mode="replace") as writer:
    writer.write(ev.RunStart(step=0, task="t", tools=[{"name": "lookup"}]))
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(1, steps + 1):
        time.sleep(random.uniform(0.1, 0.2))
        writer.write_all([ev.StepStart(step=n), ev.Thought(step=n, text="I look it up."),
                          ev.ActionTaken(step=n, tool="lookup", args={"title": f"t{n}"}, call=f"lookup(t{n})"),
                          ev.Observation(step=n, text=f"shelf {n}"),
                          ev.GuardCounters(step=n, steps=[n, None], repeats=[1, None])])
        print(n, time.monotonic(), flush=True)
    time.sleep(0.5)
    writer.write(ev.RunEnd(step=steps, outcome="unfinished", steps=steps))
print("done", flush=True)
"""


class Writer:
    def __init__(self, path: Path, steps: int):
        self.process = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(steps)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "ready"
        self.written: dict[int, float] = {}

    def go(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            parts = line.split()
            if len(parts) == 2:
                self.written[int(parts[0])] = float(parts[1])

    def wait(self) -> None:
        self.process.wait(120)
        self.process.stdin.close()


def latencies(written: dict[int, float], seen: dict[int, float]) -> list[float]:
    return [(seen[n] - written[n]) * 1000 for n in sorted(written) if n in seen]


def poll_thread(look: Callable[[], int], seen: dict[int, float], stop: threading.Event) -> threading.Thread:
    """Every millisecond: ``look()`` says how many steps are visible; new ones are timed."""
    def run() -> None:
        count = 0
        while not stop.is_set():
            now_count = look()
            if now_count > count:
                now = time.monotonic()
                for n in range(count + 1, now_count + 1):
                    seen[n] = now
                count = now_count
            time.sleep(0.001)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def file_size(path: Path, steps: int) -> tuple[dict[int, float], dict[int, float]]:
    writer = Writer(path, steps)
    read = [path.stat().st_size, 0, b""]  # where the new bytes start, whole steps seen, a partial line

    def look() -> int:
        size = os.stat(path).st_size
        if size > read[0]:
            with open(path, "rb") as handle:
                handle.seek(read[0])
                data = read[2] + handle.read(size - read[0])
            read[0] = size
            lines = data.split(b"\n")
            read[2] = lines.pop()  # a line still being written
            read[1] += sum(line.startswith(b'{"type":"guards"') for line in lines)  # the last line of a step
        return read[1]

    seen: dict[int, float] = {}
    stop = threading.Event()
    thread = poll_thread(look, seen, stop)
    writer.go()
    writer.wait()
    stop.set()
    thread.join()
    return writer.written, seen


def reader(path: Path, steps: int) -> tuple[dict[int, float], dict[int, float]]:
    from agentdbg.trace.reader import open_trace

    writer = Writer(path, steps)
    document = open_trace(path, follow=True)
    document.wait(10)
    seen: dict[int, float] = {}
    stop = threading.Event()
    thread = poll_thread(lambda: document.runs[0].step_count if document.runs else 0, seen, stop)
    writer.go()
    writer.wait()
    time.sleep(0.3)
    stop.set()
    thread.join()
    document.close()
    return writer.written, seen


def screen(path: Path, steps: int) -> tuple[dict[int, float], dict[int, float]]:
    from agentdbg.documents import open_document
    from agentdbg.tui.app import DebuggerApp
    from agentdbg.tui.widgets.timeline import Timeline

    seen: dict[int, float] = {}
    original = Timeline.set_step_count

    def timed(self, count: int) -> None:
        now = time.monotonic()
        for n in range(1, count + 1):
            seen.setdefault(n, now)
        original(self, count)

    writer = Writer(path, steps)
    Timeline.set_step_count = timed
    try:
        app = DebuggerApp(open_document(path), save_breakpoints=False)

        async def drive() -> None:
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause(0.3)
                writer.go()
                while writer.process.poll() is None:
                    await pilot.pause(0.05)
                await pilot.pause(0.3)

        asyncio.run(drive())
    finally:
        Timeline.set_step_count = original
    writer.wait()
    return writer.written, seen


def describe(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return (f"median {statistics.median(ordered):6.1f} ms   p95 {p95:6.1f} ms   worst {ordered[-1]:6.1f} ms"
            f"   ({len(ordered)} steps)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    steps = parser.parse_args().steps
    folder = Path(tempfile.mkdtemp(prefix="agentdbg-live-"))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{steps} steps written ~150 ms apart by another process; load average {load:.1f}")
    results = {}
    for label, observer in (("file size", file_size), ("reader", reader), ("screen", screen)):
        written, seen = observer(folder / f"{label.replace(' ', '_')}.jsonl", steps)
        results[label] = latencies(written, seen)
        print(f"  {label:<10} {describe(results[label])}")
    if results["reader"] and results["screen"]:
        extra = statistics.median(results["screen"]) - statistics.median(results["reader"])
        print(f"  the screen adds {extra:+.1f} ms (median) to the reader; target: screen median <= 100 ms")


if __name__ == "__main__":
    main()
