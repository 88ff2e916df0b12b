"""What a fork costs against running the plan, in one process on the same plan:

  run         the plan run to its end (the parent)
  fork@N      a fork at step N: steps 1..N-1 replayed and checked against the parent,
              the edited step, then the rest to the end

A fork runs about as many steps as the plan itself (those before N are replayed, those
after run), so the ratio to ``run`` should stay near 1 wherever it is made; what it adds
is checking each replayed step against the recording. An edit may make the fork longer or
shorter than its parent, so the ratio per step is printed too. Prints the time of each and
the ratio to the run. No assertion: figures to watch.

    python benchmarks/fork_replay.py [--plan sample_plans/grid/reactive.toml] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from agentdbg.engine.step_edit import StepEdit
from agentdbg.forking import start_fork
from agentdbg.model.state import group_run
from agentdbg.plans import load_plan

ROOT = Path(__file__).resolve().parents[1]


def best(repeat: int, job) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", default=str(ROOT / "sample_plans" / "grid" / "reactive.toml"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    plan = load_plan(args.plan)
    parent = plan.run().events
    steps = group_run(parent).records
    baseline = best(args.repeat, plan.run)
    print(f"{plan.name}: {len(steps)} steps")
    print(f"  {'run':<10} {baseline * 1000:9.1f} ms   1.00x   {len(steps)} steps")
    for step in sorted({1, len(steps) // 2, len(steps)}):
        record = steps[step - 1]
        edit = StepEdit("observation" if record.observation is not None and record.tool else "thought", "edited")
        took = best(args.repeat, lambda step=step, edit=edit: start_fork(plan, parent, step, edit).run_to_end())
        ran = len(group_run(start_fork(plan, parent, step, edit).run_to_end()).records)
        print(f"  {f'fork@{step}':<10} {took * 1000:9.1f} ms   {took / baseline:.2f}x   {ran} steps "
              f"({took / ran / (baseline / len(steps)):.2f}x per step)")


if __name__ == "__main__":
    main()
