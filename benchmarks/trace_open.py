"""How fast a huge trace opens, against loading it naively, measured in one run.

For the synthetic trace of STEPS steps (1,000,000 by default, about 300 MB; written by
gen_trace.py when missing), each measurement runs in its own fresh Python process so peak
memory figures do not pollute each other:

  agentdbg   open_trace(): time until step 1 is readable (decoded record), time until the
             background index is complete, time to read step 500,000 with its full derived
             state (record + state_at, cold caches), the slowest of 50 random steps with their
             state, and the process's peak RSS (interpreter and imports included)
  naive      json.loads every line into a list (nothing is readable before that is done),
             then typed events, grouped, and the state folded up to step 500,000
  cli        wall time of `agentdbg show FILE --step 500000 --json` and `agentdbg stats FILE`
             (process start, imports, open, answer)
  wc -l      the same file through `wc -l` (a floor: reading the bytes, nothing else)
  toolong    Toolong headless (first lines shown / scan complete), when a virtual environment
             with toolong exists at /tmp/tl and ../shared/bench/toolong_open.py is present

Prints the figures, the naive/agentdbg ratios and the targets (first step < 0.3 s, index
< 1.0 s, any step with its state < 20 ms, peak memory < 150 MB). No assertion: figures.

    python benchmarks/trace_open.py [--steps N] [--no-naive] [--no-toolong]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGETS = {"first_s": 0.3, "index_s": 1.0, "any_step_max_s": 0.020, "peak_rss_mb": 150}
TOOLONG_PYTHON = Path("/tmp/tl/bin/python")
TOOLONG_SCRIPT = HERE.parent.parent / "shared" / "bench" / "toolong_open.py"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


# -- measurements, each run in a child process ----------------------------------------------


def measure_agentdbg(path: str, target_step: int) -> dict:
    from agentdbg.trace.reader import open_trace

    base_rss = peak_rss_mb()
    started = time.perf_counter()
    document = open_trace(path)
    run = document.runs[0]
    first = run.record(1)
    first_s = time.perf_counter() - started
    steps_at_first = run.step_count
    document.wait()
    index_s = time.perf_counter() - started
    while document.index._thread is not None and document.index._thread.is_alive():
        time.sleep(0.001)  # the thread records its CPU time as it ends
    index_cpu_s = document.index.cpu_seconds
    total = sum(r.step_count for r in document.runs)
    step = min(target_step, run.step_count)
    t = time.perf_counter()
    record = run.record(step)
    state = run.state_at(step)
    step_s = time.perf_counter() - t
    rng = random.Random(1)
    timings = []
    for _ in range(50):
        n = rng.randint(1, run.step_count)
        t = time.perf_counter()
        run.record(n)
        run.state_at(n)
        timings.append(time.perf_counter() - t)
    t = time.perf_counter()
    final = run.state_at(run.step_count)
    last_s = time.perf_counter() - t
    result = {
        "first_s": first_s, "steps_known_at_first": steps_at_first, "index_s": index_s, "steps": total,
        "index_cpu_s": index_cpu_s,
        "step": step, "step_s": step_s, "any_step_max_s": max(timings), "any_step_median_s": sorted(timings)[25],
        "final_state_s": last_s, "peak_rss_mb": peak_rss_mb(), "base_rss_mb": base_rss,
        "check": [first.step, record.step, state.step, final.outcome, len(document.problems)],
    }
    document.close()
    return result


def measure_naive(path: str, target_step: int, with_state: bool) -> dict:
    import json as json_module

    base_rss = peak_rss_mb()
    started = time.perf_counter()
    with open(path, "rb") as handle:
        lines = [json_module.loads(line) for line in handle]
    load_s = time.perf_counter() - started
    result = {"first_s": load_s, "index_s": load_s, "lines": len(lines), "base_rss_mb": base_rss}
    if with_state:
        from agentdbg.engine.events import event_from_dict
        from agentdbg.state import group_run

        t = time.perf_counter()
        events = [event_from_dict(obj) for obj in lines if obj.get("type") not in ("header", "checkpoint")]
        del lines
        run = group_run(events)
        state = run.state_at(min(target_step, run.step_count))
        result["step_s"] = time.perf_counter() - t
        result["check"] = [state.step]
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def child(kind: str, path: str, target_step: int, with_state: bool) -> None:
    if kind == "agentdbg":
        print(json.dumps(measure_agentdbg(path, target_step)))
    else:
        print(json.dumps(measure_naive(path, target_step, with_state)))


def in_child(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"measurement {args[0]} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


# -- report ---------------------------------------------------------------------------------


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def ratio(naive: float | None, ours: float | None) -> str:
    if not naive or not ours:
        return "-"
    return f"{naive / ours:,.0f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description="trace open benchmark")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--step", type=int, default=500_000, help="the step read with its full state")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline (slow and memory hungry)")
    parser.add_argument("--no-naive-state", action="store_true", help="naive baseline: load only, no state fold")
    parser.add_argument("--no-toolong", action="store_true")
    parser.add_argument("--child", nargs=4, metavar=("KIND", "PATH", "STEP", "STATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, path, step, state = args.child
        child(kind, path, int(step), state == "1")
        return

    from gen_trace import ensure_trace

    path = str(ensure_trace(args.steps))
    size = os.path.getsize(path)
    step = min(args.step, args.steps)
    load = os.getloadavg()[0]
    print(f"trace  {path}\n       {args.steps:,} steps, {size / 1e6:.0f} MB; {os.cpu_count()} CPUs, "
          f"load average {load:.1f} at start; Python {sys.version.split()[0]}", flush=True)
    # Warm the page cache once, so every contender reads the file from memory.
    wc_s = min(wall(["wc", "-l", path]) for _ in range(2))
    ours = in_child("agentdbg", path, str(step), "1")
    naive = None if args.no_naive else in_child("naive", path, str(step), "0" if args.no_naive_state else "1")
    agentdbg = [sys.executable, "-m", "agentdbg"]
    cli_step = wall([*agentdbg, "show", path, "--step", str(step), "--json"])
    cli_stats = wall([*agentdbg, "stats", path])

    rows = [
        ("first step readable", ours["first_s"], naive and naive["first_s"]),
        ("index complete", ours["index_s"], naive and naive["index_s"]),
        (f"step {step:,} with full state", ours["step_s"], naive and naive.get("step_s")),
    ]
    print()
    print(f"{'':34}{'agentdbg':>12}{'naive':>12}{'ratio':>10}")
    for name, mine, theirs in rows:
        print(f"{name:34}{seconds(mine):>12}{seconds(theirs):>12}{ratio(theirs, mine):>10}")
    naive_rss = f"{naive['peak_rss_mb']:.0f} MB" if naive else "-"
    print(f"{'peak memory (RSS)':34}{ours['peak_rss_mb']:>9.0f} MB{naive_rss:>12}"
          f"{ratio(naive and naive['peak_rss_mb'], ours['peak_rss_mb']):>10}")
    print()
    print(f"agentdbg: index thread CPU time {seconds(ours['index_cpu_s'])} (wall time above includes waiting for a CPU); "
          f"{ours['steps_known_at_first']:,} steps indexed when step 1 was read; "
          f"50 random steps with state: median {seconds(ours['any_step_median_s'])}, "
          f"slowest {seconds(ours['any_step_max_s'])}; final state (stats) {seconds(ours['final_state_s'])}; "
          f"interpreter and imports {ours['base_rss_mb']:.0f} MB of the peak")
    print(f"cli: `agentdbg show --step {step:,} --json` {seconds(cli_step)}, `agentdbg stats` {seconds(cli_stats)} "
          "(whole process: start, imports, open, answer)")
    print(f"wc -l: {seconds(wc_s)}")
    if naive:
        print(f"naive: {naive['lines']:,} lines; interpreter {naive['base_rss_mb']:.0f} MB of the peak")
    if not args.no_toolong:
        if TOOLONG_PYTHON.exists() and TOOLONG_SCRIPT.exists():
            out = subprocess.run([str(TOOLONG_PYTHON), str(TOOLONG_SCRIPT), path], capture_output=True, text=True)
            print(out.stdout.strip() or f"toolong failed: {out.stderr.strip()[-300:]}")
        else:
            print(f"toolong: not measured (needs {TOOLONG_PYTHON} with toolong and {TOOLONG_SCRIPT})")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (figures are wall times on a shared machine)")
    print()
    checks = [
        ("first step readable", ours["first_s"], TARGETS["first_s"], "s"),
        ("index complete", ours["index_s"], TARGETS["index_s"], "s"),
        ("any step with full state (slowest)", max(ours["any_step_max_s"], ours["step_s"]), TARGETS["any_step_max_s"], "s"),
        ("peak memory", ours["peak_rss_mb"], TARGETS["peak_rss_mb"], "MB"),
    ]
    for name, value, target, unit in checks:
        shown = seconds(value) if unit == "s" else f"{value:.0f} MB"
        limit = seconds(target) if unit == "s" else f"{target} MB"
        print(f"target {name}: {shown} (under {limit}: {'yes' if value < target else 'NO'})")


if __name__ == "__main__":
    main()
