"""How responsive the debugger screen is on a 1M-step trace, driven by the pilot.

Measures, in one process, on the synthetic trace written by ``gen_trace.py``:

  launch -> first paint   opening the file, starting the app, the first screen painted
  step at ~500,000        key press (n / p) to every pane updated and the screen painted
  step near the start     the same at step ~10: the baseline a file's size must not change
  unbound key             a key the app ignores: the floor of the pilot's own round trip

and prints medians, 90th percentiles and ratios. No assertion: figures to watch (targets:
under 16 ms a step, under 1 s to the first screen).

    python benchmarks/tui_responsiveness.py [STEPS] [--presses N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from textual import events

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_trace import ensure_trace  # noqa: E402

from agentdbg.tui.app import DebuggerApp  # noqa: E402
from agentdbg.tui.opening import open_for_app  # noqa: E402

SIZE = (120, 40)


async def paint(pilot) -> None:
    """Wait until the key's messages are handled, then paint what changed at once (a frame
    would come within 1/60 s; this measures the work, not the wait for the frame)."""
    await pilot._wait_for_screen()
    pilot.app.screen._on_timer_update()


async def timed_presses(pilot, keys: list[str]) -> list[float]:
    """Milliseconds from each key event sent to the panes updated and the screen painted."""
    app = pilot.app
    times = []
    for key in keys:
        char = key if len(key) == 1 else None
        event = events.Key(key, char)
        event.set_sender(app)
        start = time.perf_counter()
        app._driver.send_message(event)
        await paint(pilot)
        times.append((time.perf_counter() - start) * 1000)
    return times


def describe(label: str, times: list[float], baseline: float | None = None) -> str:
    median = statistics.median(times)
    p90 = sorted(times)[int(len(times) * 0.9) - 1]
    ratio = f"   {median / baseline:5.2f}x the start" if baseline else ""
    return f"{label:<28} median {median:7.2f} ms   p90 {p90:7.2f} ms   max {max(times):7.2f} ms{ratio}"


class PaintClock:
    """Notes when the app hands a frame to the terminal (rendering it to the bytes a
    terminal would get, so the cost of a frame is counted even without one)."""

    def __init__(self) -> None:
        self.frames: list[float] = []
        original = DebuggerApp._display

        def display(app, screen, renderable) -> None:
            if renderable is not None and app.screen is screen:
                render = getattr(renderable, "render_segments", None)
                if render is not None:
                    render(app.console)
                self.frames.append(time.perf_counter())
            original(app, screen, renderable)

        DebuggerApp._display = display


def import_seconds() -> float:
    """A fresh interpreter importing the app: part of what a user waits for at launch."""
    code = "import time; s = time.perf_counter(); import agentdbg.tui.app; print(time.perf_counter() - s)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


async def measure(path: Path, presses: int) -> None:
    imports = import_seconds()  # first: the file's indexing thread must not slow it down
    clock = PaintClock()
    started = time.perf_counter()
    document, _, error = open_for_app(str(path))
    if document is None:
        raise SystemExit(error)
    opened = time.perf_counter() - started
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        while not clock.frames:
            await asyncio.sleep(0.001)
        first_paint = clock.frames[0] - started
        run = app.session.run
        print(f"file: {path.name}, {path.stat().st_size / 1e6:.0f} MB; {run.step_count:,} steps indexed "
              f"at the first paint (complete: {run.complete})")
        print(f"{'open the file':<28} {opened * 1000:7.0f} ms")
        print(f"{'open -> first paint':<28} {first_paint * 1000:7.0f} ms")
        print(f"{'import the app (fresh)':<28} {imports * 1000:7.0f} ms")
        print(f"{'launch -> first paint':<28} {(imports + first_paint) * 1000:7.0f} ms   (import + open + paint)")
        document.wait(120)
        total = run.step_count
        print(f"indexing finished: {total:,} steps")

        keys = ["n", "p"] * (presses // 2)
        app.go_to_step(10)
        await pilot.pause()
        start_times = await timed_presses(pilot, keys)
        baseline = statistics.median(start_times)

        middle = total // 2
        app.go_to_step(middle)
        await pilot.pause()
        jump = time.perf_counter()
        app.go_to_step(middle - 1000)  # a jump far away: nothing in the caches
        await paint(pilot)
        jump_ms = (time.perf_counter() - jump) * 1000
        app.go_to_step(middle)
        await pilot.pause()
        middle_times = await timed_presses(pilot, keys)
        forward = await timed_presses(pilot, ["n"] * presses)  # new steps every time
        floor = await timed_presses(pilot, ["x"] * presses)

        print(describe("step near the start (n/p)", start_times))
        print(describe(f"step at ~{middle:,} (n/p)", middle_times, baseline))
        print(describe(f"{presses} steps forward (n)", forward, baseline))
        print(describe("unbound key (pilot floor)", floor))
        print(f"{'go to a far step (1,000 back)':<28} {jump_ms:7.2f} ms")
        assert app.session.cursor == middle + presses, app.session.cursor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=1_000_000)
    parser.add_argument("--presses", type=int, default=100)
    args = parser.parse_args()
    path = ensure_trace(args.steps)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} (other work slows every figure)")
    asyncio.run(measure(path, args.presses))


if __name__ == "__main__":
    main()
