"""What `agentdbg diff` costs on long runs, against reading the same steps at all.

Synthetic traces of STEPS steps (``agentdbg.trace.synthetic``): A; B, with one step
inserted near the start and one observation changed near the end; and F, a fork of A
that parts from it only near the end (one observation changed). Each round, in this
process, times:

  baseline   every step of A and B decoded once (``run.record(n)`` for each n): the
             least any comparison of what the steps say must read
  diff       ``agentdbg.diff.compare`` of A and B: the same reading, each step reduced
             to two digests, then the alignment
  diff cli   ``agentdbg diff A B --json`` to /dev/null: the above, plus the output
             (every aligned row) and the first divergence's states
  fork       ``compare`` of A and F: the steps they share byte for byte are compared
             as bytes, not decoded

and prints the median wall time of each and the ratio to the baseline. Then, each in a
process of its own, the peak memory (RSS) of ``agentdbg diff A B --json`` against
``agentdbg show B --json`` (which streams one run). No assertion: figures to watch.

    python benchmarks/diff_speed.py [STEPS] [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from agentdbg.cli import main
from agentdbg.diff import compare
from agentdbg.engine import events as ev
from agentdbg.trace.reader import open_trace
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace

WORK = Path(os.environ.get("AGENTDBG_BENCH_DIR", "/tmp/agentdbg-bench"))


def traces(steps: int) -> tuple[Path, Path, Path]:
    WORK.mkdir(parents=True, exist_ok=True)
    a, b, f = (WORK / f"diff-{name}-{steps}.jsonl" for name in "abf")
    if a.exists() and b.exists() and f.exists():
        return a, b, f
    events = list(synthetic_run(steps))
    write_trace(a, [events])
    changed = steps - 10
    write_trace(f, [[dataclasses.replace(e, text="something else")
                     if isinstance(e, ev.Observation) and e.step == changed else e for e in events]])
    other: list[ev.Event] = []
    for event in events:
        if isinstance(event, ev.Observation) and event.step == changed:
            event = dataclasses.replace(event, text="something else")
        if event.step >= 5 and not isinstance(event, ev.RunStart):
            event = dataclasses.replace(event, step=event.step + 1)
        if isinstance(event, ev.StepStart) and event.step == 6:  # a step inserted before step 5
            other += [ev.StepStart(5), ev.Thought(5, "look again"), ev.ActionTaken(5, "catalog", "again"),
                      ev.Observation(5, "none")]
        other.append(event)
    write_trace(b, [other])
    return a, b, f


def read_all(a: Path, b: Path) -> None:
    for path in (a, b):
        with open_trace(path, follow=False) as document:
            run = document.runs[0]
            run.wait()
            for step in range(1, run.step_count + 1):
                run.record(step)


def diff(a: Path, b: Path) -> int:
    with open_trace(a, follow=False) as first, open_trace(b, follow=False) as second:
        first.runs[0].wait()
        second.runs[0].wait()
        result = compare(first.runs[0], second.runs[0])
        alignment = result.alignment
        return len(alignment.segments)


def diff_cli(a: Path, b: Path) -> None:
    null = io.TextIOWrapper(open(os.devnull, "wb"), encoding="utf-8")
    with contextlib.redirect_stdout(null):
        code = main(["diff", str(a), str(b), "--json"])
    null.close()
    assert code == 1, code


def timed(job, *args) -> float:
    start = time.perf_counter()
    job(*args)
    return time.perf_counter() - start


def main_() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("steps", nargs="?", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    a, b, f = traces(args.steps)
    figures: dict[str, list[float]] = {"baseline": [], "diff": [], "diff cli": [], "fork": []}
    for _ in range(args.rounds):
        figures["baseline"].append(timed(read_all, a, b))
        figures["diff"].append(timed(diff, a, b))
        figures["diff cli"].append(timed(diff_cli, a, b))
        figures["fork"].append(timed(diff, a, f))
    base = statistics.median(figures["baseline"])
    print(f"{args.steps:,} steps a side ({a.stat().st_size / 1e6:.1f} MB + {b.stat().st_size / 1e6:.1f} MB), "
          f"median of {args.rounds}")
    for name, times in figures.items():
        median = statistics.median(times)
        print(f"  {name:<9} {median:7.2f} s   {median / base:5.2f}x baseline   "
              f"{2 * args.steps / median:>10,.0f} steps/s")
    print(f"  segments kept: {diff(a, b)}; the alignment keeps 16 bytes a step (two 8-byte digests) while it is made")
    show_rss = peak_rss(["show", str(b), "--json"])
    diff_rss = peak_rss(["diff", str(a), str(b), "--json"])
    print(f"  peak RSS: agentdbg diff A B --json {diff_rss:.0f} MB, agentdbg show B --json {show_rss:.0f} MB "
          f"({diff_rss / show_rss:.2f}x)")


def peak_rss(argv: list[str]) -> float:
    """Peak resident memory (MB) of ``agentdbg ARGV`` run in a process of its own."""
    code = ("import resource, sys; from agentdbg.cli import main; sys.stdout = open('/dev/null', 'w'); "
            f"main({argv!r}); sys.stderr.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stderr.strip().splitlines()[-1]) / 1024


if __name__ == "__main__":
    sys.exit(main_())
