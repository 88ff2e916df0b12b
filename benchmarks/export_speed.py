"""What exporting costs: `agentdbg convert --to otel-genai|openai-chat` against plain
`agentdbg convert` to an agentdbg trace, on the same input, in the same run.

The input is a synthetic run (``benchmarks/gen_trace.py``: thoughts, tool calls, unknown
tools, parse errors, memory updates, a final answer) as an agentdbg trace and, for the
importer path, the same run as OpenAI chat messages (written by a child process, so no
measured process counts the memory of the one that wrote it). Each command runs in a
child process of its own; it prints wall time, input MB/s and the child's peak RSS, and
the ratios to the baseline. No assertion: figures to watch.

    python benchmarks/export_speed.py [STEPS] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_trace import ensure_trace  # noqa: E402


def run_child(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in MB) of ``agentdbg ARGV`` in a child process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "agentdbg", *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"agentdbg {' '.join(argv)} failed ({child.returncode}): {error[-500:]}")
    return wall, usage.ru_maxrss // 1024  # Linux reports KiB


def measure(label: str, argv: list[str], size: int, rounds: int, baseline: tuple[float, int] | None) -> tuple[float, int]:
    results = [run_child(argv) for _ in range(rounds)]
    wall = statistics.median(r[0] for r in results)
    rss = max(r[1] for r in results)
    ratio = f"  x{wall / baseline[0]:.2f} time, x{rss / baseline[1]:.2f} memory" if baseline else "  (baseline)"
    print(f"{label:<42} {wall:7.2f} s {size / 1e6 / wall:8.1f} MB/s {rss:6d} MB peak{ratio}", flush=True)
    return wall, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trace = ensure_trace(args.steps)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        chat = work / "input.chat.jsonl"
        run_child(["convert", str(trace), "--to", "openai-chat", "-o", str(chat)])  # the importer's input
        out = str(work / "out")
        print(f"{args.steps:,} steps: trace {trace.stat().st_size / 1e6:.0f} MB, as chat messages "
              f"{chat.stat().st_size / 1e6:.0f} MB; median of {args.rounds}")
        size = chat.stat().st_size
        print("from OpenAI chat messages (imported):")
        base = measure("  convert -> agentdbg trace", ["convert", str(chat), "-o", out, "--force"], size,
                       args.rounds, None)
        for target in ("otel-genai", "openai-chat"):
            measure(f"  convert --to {target}", ["convert", str(chat), "--to", target, "-o", out, "--force"],
                    size, args.rounds, base)
        size = trace.stat().st_size
        print("from the agentdbg trace (read run by run, step by step):")
        for target in ("otel-genai", "openai-chat"):
            measure(f"  convert --to {target}", ["convert", str(trace), "--to", target, "-o", out, "--force"],
                    size, args.rounds, base)


if __name__ == "__main__":
    main()
