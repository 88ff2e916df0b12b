"""Generate synthetic agentdbg traces of 10k, 100k and 1M steps for the trace benchmarks.

The runs come from ``agentdbg.trace.synthetic`` (deterministic: thoughts, tool calls,
unknown-tool errors, repeated actions, parse errors, memory updates with evictions, growing
token counts, a final answer) and are written by the real trace writer, checkpoints
included. A 1M-step file is about 300 MB and takes about a minute to write.

    python benchmarks/gen_trace.py [STEPS ...] [--runs K] [--checkpoint-every N | --no-checkpoints] [--force]

Files go to benchmarks/data/ (not in version control): trace_10k.jsonl, trace_1m.jsonl, ...
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agentdbg.trace.format import CHECKPOINT_EVERY
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_STEPS = (10_000, 100_000, 1_000_000)
NO_CHECKPOINTS = 10**12  # a checkpoint interval no run reaches


def label(steps: int) -> str:
    if steps % 1_000_000 == 0:
        return f"{steps // 1_000_000}m"
    if steps % 1_000 == 0:
        return f"{steps // 1_000}k"
    return str(steps)


def trace_path(steps: int, runs: int = 1, checkpoint_every: int = CHECKPOINT_EVERY) -> Path:
    suffix = f"_{runs}runs" if runs > 1 else ""
    if checkpoint_every != CHECKPOINT_EVERY:
        suffix += "_nockpt" if checkpoint_every >= NO_CHECKPOINTS else f"_ckpt{checkpoint_every}"
    return DATA / f"trace_{label(steps)}{suffix}.jsonl"


def ensure_trace(steps: int, runs: int = 1, force: bool = False, seed: int = 0, quiet: bool = False,
                 checkpoint_every: int = CHECKPOINT_EVERY) -> Path:
    """The synthetic trace of ``steps`` steps (split over ``runs`` runs), written if missing."""
    path = trace_path(steps, runs, checkpoint_every)
    if path.exists() and not force:
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"writing {path} ({steps:,} steps in {runs} run{'s' if runs > 1 else ''}) ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    base, extra = divmod(steps, runs)
    summary = write_trace(path, (synthetic_run(base + (1 if i < extra else 0), seed=seed + i, name=f"synthetic-{i + 1}")
                                 for i in range(runs)), checkpoint_every=checkpoint_every)
    if not quiet:
        size = path.stat().st_size
        print(f"  {summary.events:,} events, {summary.checkpoints:,} checkpoints, {size / 1e6:.0f} MB "
              f"({size / max(steps, 1):.0f} bytes a step) in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="*", type=int, default=list(DEFAULT_STEPS))
    parser.add_argument("--runs", type=int, default=1, help="split the steps over this many runs (a batch file)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-every", type=int, default=CHECKPOINT_EVERY, metavar="N",
                        help=f"steps between checkpoints (default {CHECKPOINT_EVERY})")
    parser.add_argument("--no-checkpoints", action="store_true", help="write no checkpoint at all")
    parser.add_argument("--force", action="store_true", help="write again even if the file exists")
    args = parser.parse_args()
    every = NO_CHECKPOINTS if args.no_checkpoints else args.checkpoint_every
    for steps in args.steps:
        print(ensure_trace(steps, args.runs, args.force, args.seed, checkpoint_every=every))


if __name__ == "__main__":
    main()
