"""How fast Esc cancels, and q quits, during a long continue, driven by the pilot.

On the synthetic trace written by ``gen_trace.py``, with the automatic breaks off and a
filter breakpoint that needs every step decoded and never matches (``~obs (a+)+$ &
~step >1``: a backtracking engine's worst case, linear here), measures in one process:

  quit when idle           q to the end of the program's event loop, nothing running (baseline)
  quit during continue     the same while a continue scans the file
  Esc during continue      Esc to the continue stopped and the status line saying so

"The end of the event loop" includes waiting for worker threads, as a process exiting
does. Prints seconds and ratios to the baseline. No assertion: figures to watch (target:
quitting during a continue is no slower to notice than quitting when idle).

    python benchmarks/quit_latency.py [STEPS] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_trace import ensure_trace  # noqa: E402

from agentdbg.documents import open_document  # noqa: E402
from agentdbg.tui.app import DebuggerApp  # noqa: E402

SIZE = (120, 40)
FILTER = "~obs (a+)+$ & ~step >1"


async def wait_for(pilot, condition) -> None:
    while not condition():
        await pilot.pause(0.005)


async def session(path: Path, operation: str, marks: dict[str, float]) -> None:
    document = open_document(path)
    document.wait()
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.breakpoints.auto = dict.fromkeys(app.breakpoints.auto, False)
        app.breakpoints.add("filter", FILTER)
        if operation != "idle":
            await pilot.press("c")
            await wait_for(pilot, lambda: "at step" in app.query_one("#status").message)
        if operation == "escape":
            marks["start"] = time.perf_counter()
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.busy is None)
            marks["end"] = time.perf_counter()
            marks["said"] = app.query_one("#status").message
        marks["start_quit"] = time.perf_counter()
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)


def measure(path: Path, operation: str) -> tuple[float, str]:
    marks: dict[str, float] = {}
    asyncio.run(session(path, operation, marks))  # returns once every worker thread has ended
    ended = time.perf_counter()
    if operation == "escape":
        return marks["end"] - marks["start"], str(marks["said"])
    return ended - marks["start_quit"], ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = ensure_trace(args.steps)
    print(f"{path.name}: {args.steps:,} steps; filter {FILTER!r}; median of {args.repeat}")
    baseline = None
    for label, operation in (("quit when idle", "idle"), ("quit during continue", "continue"),
                             ("Esc during continue", "escape")):
        results = [measure(path, operation) for _ in range(args.repeat)]
        seconds = statistics.median(r[0] for r in results)
        baseline = baseline or seconds
        said = f"   status: {results[-1][1]}" if results[-1][1] else ""
        print(f"{label:<24} {seconds * 1000:9.1f} ms   {seconds / baseline:6.2f}x baseline{said}")


if __name__ == "__main__":
    main()
