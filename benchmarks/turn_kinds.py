"""What plan-and-execute and several calls per turn save, measured in one process.

1. Tool calls that wait (a tool sleeping ``--wait`` ms, as a network call would): ``--calls``
   of them as one turn of several calls, against the same calls one per turn (the
   baseline). The ratio should approach the number of calls (up to the pool's 8 threads).
2. Tool calls that do not wait (an instant tool): the cost of the thread pool per turn,
   as the same ratio (above 1: the pool costs more than it saves on instant tools).
3. Policy calls and tokens for the same task step by step (``kv_tax.toml``, the baseline)
   and planned (``kv_tax_planned.toml``).

Prints each figure and its ratio to its baseline. No assertion: figures to watch.

    python benchmarks/turn_kinds.py [--calls 8] [--wait 50] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from agentdbg.engine import ReActAgent, Tool, ToolRegistry
from agentdbg.engine.policies import ToyScript
from agentdbg.plans import load_plan

ROOT = Path(__file__).resolve().parents[1]


def registry(wait: float) -> ToolRegistry:
    def fetch(key: str) -> str:
        if wait:
            time.sleep(wait)
        return key

    return ToolRegistry([Tool("fetch", "", {"key": "str"}, fetch)])


def timed(steps: list[dict], wait: float, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        agent = ReActAgent(ToyScript(steps), registry(wait), max_steps=len(steps) + 1)
        start = time.perf_counter()
        trace = agent.run("fetch them all")
        times.append(time.perf_counter() - start)
        assert len(trace.tool_calls) == sum(len(s.get("actions", [s])) for s in steps)
    return statistics.median(times)


def calls(count: int, wait: float, repeat: int) -> tuple[float, float]:
    each = [{"action": "fetch", "args": {"key": str(n)}} for n in range(count)]
    one_turn = [{"thought": "all at once", "actions": each}]
    return timed(each, wait, repeat), timed(one_turn, wait, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--wait", type=float, default=50.0, help="milliseconds each waiting call takes")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for label, wait in ((f"{args.calls} calls of {args.wait:g} ms", args.wait / 1000), (f"{args.calls} instant calls", 0)):
        sequential, parallel = calls(args.calls, wait, args.repeat)
        print(f"{label:<24} one per turn {sequential * 1000:8.1f} ms   one turn {parallel * 1000:8.1f} ms   "
              f"speed-up {sequential / parallel:5.2f}x")
    react = load_plan(ROOT / "sample_plans" / "kv_tax.toml").run()
    planned = load_plan(ROOT / "sample_plans" / "kv_tax_planned.toml").run()

    def tokens(trace) -> int:
        return trace.events[-2].tokens[0]  # the last guards event's running total

    print(f"{'kv_tax step by step':<24} policy calls {react.policy_calls:3d}   tokens {tokens(react):5d}")
    print(f"{'kv_tax planned':<24} policy calls {planned.policy_calls:3d}   tokens {tokens(planned):5d}   "
          f"ratio {planned.policy_calls / react.policy_calls:.2f} calls, {tokens(planned) / tokens(react):.2f} tokens")


if __name__ == "__main__":
    main()
