"""What running the grid experiment through the engine costs: `agentdbg experiment grid`
(every episode a real run: a policy reading its prompt, tools, events, guards) against the
worked example's plain Python functions (``agentdbg.examples.grid``) on the same 200 grids,
in the same process. Prints CPU and wall time per agent, engine steps per second, and the
ratio to the baseline. No assertion: figures to watch.

    python benchmarks/grid_experiment.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from agentdbg.engine.grid import random_grids
from agentdbg.examples import grid as example
from agentdbg.experiments.grid import AGENTS, run_episode, run_experiment

BASELINE = {"reactive": example.reactive, "memory": example.with_memory, "planner": example.bfs}


def timed(fn) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``fn()``: the machine is shared, so CPU is the steadier."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="median of this many rounds (default 3)")
    rounds = parser.parse_args().rounds
    walls = example.sample()
    grids = random_grids(7, 200)
    assert [sorted(g.walls) for g in grids] == [sorted(w) for w in walls], "the grids differ from the example's"
    steps = {agent: sum(run_episode(g, agent, 200)[1].outcome.steps for g in grids) for agent in AGENTS}

    print(f"{'agent':<10} {'engine steps':>12} {'engine CPU':>11} {'example CPU':>12} {'ratio':>8} {'steps/s':>9}")
    total_engine = total_example = 0.0
    for agent in AGENTS:
        engine = statistics.median(timed(lambda a=agent: [run_episode(g, a, 200) for g in grids])[0]
                                   for _ in range(rounds))
        plain = statistics.median(timed(lambda a=agent: [BASELINE[a](w) for w in walls])[0] for _ in range(rounds))
        total_engine += engine
        total_example += plain
        print(f"{agent:<10} {steps[agent]:>12,} {engine:>10.2f}s {plain * 1000:>10.1f}ms {engine / plain:>7.0f}x "
              f"{steps[agent] / engine:>9,.0f}")
    print(f"{'all three':<10} {sum(steps.values()):>12,} {total_engine:>10.2f}s {total_example * 1000:>10.1f}ms "
          f"{total_engine / total_example:>7.0f}x {sum(steps.values()) / total_engine:>9,.0f}")
    cpu, wall = timed(run_experiment)
    print(f"\nthe whole experiment (grids drawn, checks, three agents): {cpu:.2f} s CPU, {wall:.2f} s wall")


if __name__ == "__main__":
    main()
