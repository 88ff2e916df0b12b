"""``agentdbg experiment grid``: run an experiment headless and print its table.

``grid``: the reactive, memory and planner agents on random grids (``agentdbg.experiments.grid``),
every episode a real run of the engine. The defaults are the worked example's: seed 7,
200 grids of 8x8, density 0.28, 200 moves at most. Exit 0 when every check holds, 1 when
one fails (listed on stderr), 2 for settings out of range.
"""

from __future__ import annotations

import argparse
import json
import sys

from agentdbg.cli import render
from agentdbg.engine.grid import GridError
from agentdbg.experiments import EXPERIMENTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "experiments:\n" + "\n".join(f"  {name:<6} {text}" for name, text in EXPERIMENTS.items())
    parser.add_argument("name", choices=sorted(EXPERIMENTS), help="the experiment to run")
    parser.add_argument("--seed", type=int, default=7, help="the seed of random.Random that draws the grids (default 7)")
    parser.add_argument("--episodes", type=int, default=200, metavar="N", help="how many grids (default 200)")
    parser.add_argument("--size", type=int, default=8, metavar="N", help="grids of N x N cells (default 8)")
    parser.add_argument("--density", type=float, default=0.28,
                        help="the chance that a cell is a wall (default 0.28)")
    parser.add_argument("--limit", type=int, default=200, metavar="MOVES",
                        help="the step budget of each walk: moves at most (default 200)")
    parser.add_argument("--json", action="store_true",
                        help="the settings, each agent's figures, the table, the checks and every episode as JSON")


def run(args: argparse.Namespace) -> int:
    from agentdbg.experiments.grid import run_experiment

    try:
        result = run_experiment(seed=args.seed, episodes=args.episodes, size=args.size, density=args.density,
                                limit=args.limit)
    except (GridError, ValueError) as exc:
        return render.fail("experiment", str(exc))
    try:
        if args.json:
            print(json.dumps(result.to_dict()), flush=True)
        else:
            print("\n".join(result.table()), flush=True)
    except BrokenPipeError:
        render.quiet_broken_pipe()
        return 0
    for problem in result.problems[:20]:
        print(f"agentdbg experiment: check failed: {problem}", file=sys.stderr)
    if len(result.problems) > 20:
        print(f"agentdbg experiment: ... and {len(result.problems) - 20} more failed checks", file=sys.stderr)
    return 1 if result.problems else 0
