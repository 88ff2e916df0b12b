"""``agentdbg check`` over a folder of many trace files: one process (``-j 1``, the
baseline, measured in the same run) against one process per CPU (``-j N``).

The files are synthetic runs (``agentdbg.trace.synthetic``, as gen_trace.py writes them:
tool calls, unknown-tool errors, repeats, parse errors, a final answer), written once to
benchmarks/data/check_many_FILES_STEPS/. Each figure is the best of ``--repeat`` runs of
the command in a fresh process; both outputs are compared (the same, whatever the jobs).

    python benchmarks/check_many.py [--files 1000] [--steps 400] [--jobs N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_trace import DATA  # noqa: E402

from agentdbg.trace.synthetic import synthetic_run  # noqa: E402
from agentdbg.trace.writer import write_trace  # noqa: E402

AGENTDBG = [sys.executable, "-m", "agentdbg"]


def ensure_files(count: int, steps: int) -> Path:
    folder = DATA / f"check_many_{count}_{steps}"
    done = folder / ".complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for number in range(count):
        write_trace(folder / f"run_{number:05d}.jsonl", [synthetic_run(steps, seed=number, name=f"run-{number}")])
    done.write_text("", encoding="utf-8")  # a hidden file: check does not read it
    print(f"wrote {count:,} files of {steps} steps in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return folder


def timed(argv: list[str], repeat: int) -> tuple[float, str]:
    best, output = float("inf"), ""
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        best = min(best, time.perf_counter() - started)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
        output = done.stdout
    return best, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=400, help="steps per file's run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="the parallel run's -j")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs of each")
    args = parser.parse_args()
    folder = ensure_files(args.files, args.steps)
    command = [*AGENTDBG, "check", str(folder), "--fail-on", "error,repeat,budget"]
    serial, serial_out = timed([*command, "-j", "1"], args.repeat)
    parallel, parallel_out = timed([*command, "-j", str(args.jobs)], args.repeat)
    summary = serial_out.strip().splitlines()[-1] if serial_out.strip() else "(no output)"
    print(f"check over {args.files:,} files of {args.steps} steps ({os.cpu_count()} CPUs; best of {args.repeat})")
    print(f"  {summary[:150]}")
    print(f"  -j 1 (baseline)  {serial:7.2f} s   {args.files / serial:8,.0f} files/s")
    print(f"  -j {args.jobs:<2}            {parallel:7.2f} s   {args.files / parallel:8,.0f} files/s")
    print(f"  speed-up         {serial / parallel:7.2f}x")
    print(f"  same output      {'yes' if serial_out == parallel_out else 'NO'}")


if __name__ == "__main__":
    main()
