"""How the number of breakpoints in a breakpoints file costs: reading, saving, the debugger
opening with them, and the breakpoint manager (B) opening over them.

For 1,000, 10,000 and 100,000 breakpoints (step breakpoints, as the b key sets them, and
a mix with tool and filter breakpoints), times in one process:

  json.loads       parsing the file's JSON alone (the baseline: the least a load must do)
  load             BreakpointSet.load: the file read, checked and every breakpoint indexed
  save             BreakpointSet.save: written atomically (what each b or edit in B costs)
  debugger, B      (steps only) the app started on a plan with that file beside it until its
                   first screen, then B pressed until the manager is shown; against the
                   same with no breakpoints

and prints each figure, its ratio to the baseline, and the ratio to the figure for ten
times fewer breakpoints (about 10 when the cost is linear). No assertion: figures to watch.

    python benchmarks/breakpoints_load.py [--counts 1000,10000,100000] [--no-app]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agentdbg.debugger.breakpoints import BreakpointSet, sidecar_path

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "sample_plans" / "library_hallucinating.toml"
SIZE = (120, 40)


def breakpoints_of(count: int, mix: str) -> BreakpointSet:
    breakpoints = BreakpointSet()
    for n in range(1, count + 1):
        if mix == "mixed" and n % 10 == 0:
            breakpoints.add("tool", f"tool_{n}")
        elif mix == "mixed" and n % 10 == 5:
            breakpoints.add("filter", f"~tool calc & ~step >{n} | ~tokens >{n}")
        else:
            breakpoints.add("step", n)
    return breakpoints


def best_of(repeats: int, work, *args) -> float:
    """The fastest of ``repeats`` runs of ``work(*args)``, in seconds (the least disturbed
    by other load on the machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work(*args)
        times.append(time.perf_counter() - start)
    return min(times)


async def app_times(plan: Path) -> tuple[float, float]:
    """Seconds from starting the app to its first screen, and from B to the manager shown."""
    from agentdbg.documents import open_document
    from agentdbg.tui.app import DebuggerApp

    start = time.perf_counter()
    app = DebuggerApp(open_document(plan))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        launched = time.perf_counter() - start
        start = time.perf_counter()
        await pilot.press("B")
        await pilot.pause()
        app.screen._on_timer_update()  # paint now rather than at the next frame
        manager = time.perf_counter() - start
        assert app.screen.id == "breakpoints"
    return launched, manager


def ratio(value: float, base: float | None) -> str:
    return f"{value / base:8.1f}x" if base else " " * 9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="1000,10000,100000")
    parser.add_argument("--no-app", action="store_true", help="leave out the debugger figures")
    options = parser.parse_args()
    counts = [int(c) for c in options.counts.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f}; best of 3 runs for the file figures\n")
    print(f"{'breakpoints':>11}  {'kind':<6} {'file':>9}  {'json.loads':>10}  {'load':>9} {'/json':>9} "
          f"{'/10x fewer':>10}  {'per bp':>8}  {'save':>9} {'/10x fewer':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for mix in ("steps", "mixed"):
            previous_load = previous_save = None
            for count in counts:
                breakpoints = breakpoints_of(count, mix)
                path = Path(folder) / f"{mix}-{count}.breakpoints.json"
                saving = best_of(3, breakpoints.save, path)
                raw = path.read_bytes()
                parsing = best_of(3, json.loads, raw)
                loading = best_of(3, BreakpointSet.load, path)
                grew_load = ratio(loading, previous_load) if previous_load else ""
                grew_save = ratio(saving, previous_save) if previous_save else ""
                print(f"{count:>11,}  {mix:<6} {len(raw) / 1e6:7.2f} MB  {parsing * 1000:7.1f} ms  "
                      f"{loading * 1000:6.0f} ms {ratio(loading, parsing)} {grew_load:>10}  "
                      f"{loading / count * 1e6:5.1f} us  {saving * 1000:6.0f} ms {grew_save:>10}")
                previous_load, previous_save = loading, saving
        if options.no_app:
            return
        print(f"\n{'breakpoints':>11}  {'launch to first screen':>24}  {'B to the manager shown':>24}")
        plan = Path(folder) / PLAN.name
        shutil.copy(PLAN, plan)
        base_launch, base_manager = asyncio.run(app_times(plan))
        print(f"{0:>11,}  {base_launch * 1000:10.0f} ms (baseline)  {base_manager * 1000:10.0f} ms (baseline)")
        for count in counts:
            breakpoints_of(count, "steps").save(sidecar_path(plan))
            launch, manager = asyncio.run(app_times(plan))
            print(f"{count:>11,}  {launch * 1000:10.0f} ms {ratio(launch, base_launch)}   "
                  f"{manager * 1000:10.0f} ms {ratio(manager, base_manager)}")


if __name__ == "__main__":
    sys.exit(main())
