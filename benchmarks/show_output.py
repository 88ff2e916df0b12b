"""What the output boundary costs `agentdbg show` on a long trace.

Every line the headless commands write passes ``agentdbg.cli.terminal``: the stream
sanitises it once more (``sanitize_stream``) and JSON output escapes what could fool a
terminal (``escape_json``). This runs ``show`` and ``show --json`` in this process on a
synthetic trace (``benchmarks/gen_trace.py``), writing to /dev/null as a pipe would, in
alternating rounds:

  baseline   the boundary switched off (the stream passes text through untouched, JSON is
             not escaped): what the commands cost without it
  boundary   as shipped

and prints the median CPU and wall time of each, and the ratio to the baseline. On a
shared machine those vary by more than the boundary costs, so it also times the boundary
alone: what the command wrote, passed through ``sanitize_stream`` (and ``escape_json`` for
``--json``) as it was written, against the command's CPU time. No assertion: figures to
watch.

    python benchmarks/show_output.py [STEPS] [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_trace import ensure_trace  # noqa: E402

from agentdbg.cli import main, render, terminal  # noqa: E402
from agentdbg.text import escape_json, sanitize_stream  # noqa: E402


@contextlib.contextmanager
def boundary_off() -> Iterator[None]:
    saved = terminal.TerminalStream.write, render.escape_json
    terminal.TerminalStream.write = lambda self, text: self.stream.write(text)  # type: ignore[method-assign]
    render.escape_json = lambda text: text
    try:
        yield
    finally:
        terminal.TerminalStream.write, render.escape_json = saved  # type: ignore[method-assign]


def timed(argv: list[str]) -> tuple[float, float]:
    null = io.TextIOWrapper(open(os.devnull, "wb"), encoding="utf-8")
    saved = sys.stdout
    sys.stdout = null
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        code = main(argv)
        null.flush()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        sys.stdout = saved
        null.close()
    assert code == 0
    return cpu, wall


def captured(argv: list[str]) -> tuple[list[str], float]:
    """What the command wrote, write by write, and its CPU time."""
    writes: list[str] = []

    class Capture(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

    saved = sys.stdout
    sys.stdout = Capture()
    try:
        with boundary_off():
            cpu = time.process_time()
            main(argv)
            cpu = time.process_time() - cpu
    finally:
        sys.stdout = saved
    return writes, cpu


def boundary_alone(argv: list[str], rounds: int) -> None:
    writes, cpu = captured(argv)
    work = [sanitize_stream] + ([escape_json] if "--json" in argv else [])
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for text in writes:
            for step in work:
                step(text)
        best = min(best, time.process_time() - start)
    size = sum(map(len, writes))
    print(f"{' '.join(argv[:-1]):<12} boundary alone: {len(writes):,} writes, {size / 1e6:.1f} M characters in "
          f"{best * 1000:.1f} ms = {best / cpu * 100:.2f}% of the command's {cpu:.2f} s CPU")


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    path = ensure_trace(args.steps)
    print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, {args.rounds} rounds each, medians\n")
    for command in (["show"], ["show", "--json"]):
        figures: dict[str, list[tuple[float, float]]] = {"baseline": [], "boundary": []}
        for _ in range(args.rounds):
            with boundary_off():
                figures["baseline"].append(timed([*command, str(path)]))
            figures["boundary"].append(timed([*command, str(path)]))
        base_cpu = statistics.median(cpu for cpu, _ in figures["baseline"])
        for label, runs in figures.items():
            cpu = statistics.median(c for c, _ in runs)
            wall = statistics.median(w for _, w in runs)
            print(f"{' '.join(command):<12} {label:<9} {cpu:7.2f} s CPU {wall:7.2f} s wall "
                  f"{cpu / base_cpu:6.3f}x baseline CPU")
        boundary_alone([*command, str(path)], args.rounds)
        print()


if __name__ == "__main__":
    main_benchmark()
