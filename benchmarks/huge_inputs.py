"""Huge inputs: how long each command takes and how much memory it uses, with a baseline
measured in the same run. Each measurement is a fresh process (its wall time, CPU time and
peak RSS are those of that process alone):

  runs       a trace of RUNS empty runs (``run_start`` lines only; 1,000,000: 41 MB):
             open and index it, ``show --run RUNS``, ``stats`` (which reads the first
             20,000 runs, --max-runs), ``show`` (the same) and ``check`` (which refuses), the debugger's
             first screen; baseline: json.loads of every line
  events     a trace whose step 5 holds EVENTS events (1,000,000: 50 MB): ``show --step 5``,
             ``stats``, the debugger at step 5 (its first 10,000 events are read); baseline:
             json.loads of every line
  message    an OpenAI chat whose tool reply is MB megabytes (200 by default): ``show``,
             ``stats``, the debugger's first screen with the reply cut; baseline: json.loads
             of the file (what an import cannot avoid)
  fold       a STEPS-step synthetic trace without checkpoints (gen_trace.py
             --no-checkpoints; 1,000,000: 300 MB): ``stats`` (the fast fold from the steps'
             bytes) against ``stats --full`` (every step decoded: the baseline, the same figures)

No assertion: figures. Inputs are written to benchmarks/data/ when missing, each by a
child process (a child forked from a large parent would count the parent's memory).

    python benchmarks/huge_inputs.py [--runs N] [--events N] [--mb N] [--steps N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_trace import DATA, NO_CHECKPOINTS, ensure_trace, label, trace_path  # noqa: E402

HEADER = b'{"type":"header","format":"agentdbg-trace","version":1}\n'
AGENTDBG = [sys.executable, "-m", "agentdbg"]


def measure(argv: list[str]) -> dict:
    """Wall and CPU seconds and peak RSS (MB) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024,
            "code": process.returncode, "stderr": stderr.strip().splitlines()[-1:] if stderr.strip() else []}


def show(label_: str, figures: dict, baseline: dict | None = None) -> None:
    ratio = f"   {baseline['wall'] / figures['wall']:6.1f}x faster than the baseline" if baseline else ""
    code = f"  exit {figures['code']}" if figures["code"] else ""
    print(f"  {label_:<44} {figures['wall']:7.2f} s wall {figures['cpu']:7.2f} s CPU "
          f"{figures['rss']:7.0f} MB{code}{ratio}", flush=True)
    for line in figures["stderr"]:
        print(f"  {'':<44} stderr: {line[:150]}")


def naive_lines(path: Path) -> list[str]:
    return [sys.executable, "-c", "import json, sys\n"
            "for line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n", str(path)]


def naive_file(path: Path) -> list[str]:
    return [sys.executable, "-c", "import json, sys; json.loads(open(sys.argv[1], 'rb').read())", str(path)]


def tui(path: Path, keys: str = "") -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--tui-child", str(path), *keys.split()]


async def _tui_child(path: str, keys: list[str]) -> None:
    """Open ``path`` in the debugger (pilot), wait for the first screen, press ``keys``."""
    from agentdbg.tui.app import DebuggerApp
    from agentdbg.tui.opening import open_for_app

    document, _, error = open_for_app(path)
    if error:
        raise SystemExit(error)
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            await app.workers.wait_for_complete()


# -- inputs -----------------------------------------------------------------------------------


def runs_file(count: int) -> Path:
    path = DATA / f"runs_{label(count)}.jsonl"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        line = b'{"type":"run_start","step":0,"task":"t"}\n'
        with open(path, "wb") as out:
            out.write(HEADER)
            for _ in range(count // 10_000):
                out.write(line * 10_000)
            out.write(line * (count % 10_000))
    return path


def events_file(count: int) -> Path:
    path = DATA / f"events_{label(count)}_in_one_step.jsonl"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            out.write(HEADER + b'{"type":"run_start","step":0,"task":"t"}\n')
            for step in range(1, 6):
                out.write(b'{"type":"step","step":%d}\n' % step)
                for n in range(count if step == 5 else 3):
                    out.write(b'{"type":"thought","step":%d,"text":"thinking %d"}\n' % (step, n))
            out.write(b'{"type":"run_end","step":5,"outcome":"answered","answer":"x","steps":5}\n')
    return path


def message_file(megabytes: int) -> Path:
    path = DATA / f"chat_{megabytes}mb_reply.json"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        line = "The quick brown fox jumps over the lazy dog. " * 23 + "\n"
        content = line * (megabytes * 1024 * 1024 // len(line))
        messages = [{"role": "user", "content": "Read the log."},
                    {"role": "assistant", "content": "Reading it.",
                     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": content},
                    {"role": "assistant", "content": "It is long."}]
        path.write_text(json.dumps(messages))
    return path


# -- the four cases ----------------------------------------------------------------------------


MAKERS = {"runs": lambda n: runs_file(n), "events": lambda n: events_file(n), "message": lambda n: message_file(n),
          "fold": lambda n: ensure_trace(n, checkpoint_every=NO_CHECKPOINTS)}


def make(kind: str, size: int) -> Path:
    """The input, written by a child process when missing."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--make-child", kind, str(size)],
                          check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


def bench_runs(count: int) -> None:
    path = make("runs", count)
    print(f"\n{count:,} empty runs ({path.stat().st_size / 1e6:.0f} MB): {path}")
    baseline = measure(naive_lines(path))
    show("baseline: json.loads every line", baseline)
    code = ("import sys; from agentdbg.trace.reader import open_trace\n"
            "d = open_trace(sys.argv[1]); d.wait(); r = d.runs[-1]; r.info; print(len(d.runs))")
    show("open, index, read the last run", measure([sys.executable, "-c", code, str(path)]), baseline)
    show(f"show --run {count}", measure(AGENTDBG + ["show", str(path), "--run", str(count)]), baseline)
    show("stats (the first 20,000 runs)", measure(AGENTDBG + ["stats", str(path)]), baseline)
    show("stats --json (the first 20,000 runs)", measure(AGENTDBG + ["stats", str(path), "--json"]), baseline)
    show("show (the first 20,000 runs)", measure(AGENTDBG + ["show", str(path)]), baseline)
    show("check (refuses: more runs than --max-runs)", measure(AGENTDBG + ["check", str(path)]), baseline)
    show("debugger: first screen, then r (run list)", measure(tui(path, "r escape")), baseline)


def bench_events(count: int) -> None:
    path = make("events", count)
    print(f"\n{count:,} events in step 5 ({path.stat().st_size / 1e6:.0f} MB): {path}")
    baseline = measure(naive_lines(path))
    show("baseline: json.loads every line", baseline)
    show("show --step 5", measure(AGENTDBG + ["show", str(path), "--step", "5"]), baseline)
    show("stats", measure(AGENTDBG + ["stats", str(path)]), baseline)
    show("check", measure(AGENTDBG + ["check", str(path)]), baseline)
    show("debugger: step 5, prompt view (v)", measure(tui(path, "end v v")), baseline)


def bench_message(megabytes: int) -> None:
    path = make("message", megabytes)
    print(f"\nan OpenAI chat with a {megabytes} MB tool reply: {path}")
    baseline = measure(naive_file(path))
    show("baseline: json.loads of the file", baseline)
    show("show", measure(AGENTDBG + ["show", str(path)]), baseline)
    show("show --json", measure(AGENTDBG + ["show", str(path), "--json"]), baseline)
    show("stats", measure(AGENTDBG + ["stats", str(path)]), baseline)
    show("debugger: the reply's step, prompt view (v)", measure(tui(path, "home v v")), baseline)


def bench_fold(steps: int) -> None:
    path = make("fold", steps)
    print(f"\n{steps:,} steps without checkpoints ({path.stat().st_size / 1e6:.0f} MB): {path}")
    baseline = measure(AGENTDBG + ["stats", str(path), "--full"])
    show("baseline: stats --full (every step decoded)", baseline)
    show("stats (fast fold from the steps' bytes)", measure(AGENTDBG + ["stats", str(path)]), baseline)
    with_checkpoints = trace_path(steps)
    if with_checkpoints.exists():
        show("stats of the same run with checkpoints", measure(AGENTDBG + ["stats", str(with_checkpoints)]), baseline)
    else:
        print(f"  (python benchmarks/gen_trace.py {steps} writes the same run with checkpoints, to compare)")


def main() -> None:
    if len(sys.argv) > 3 and sys.argv[1] == "--make-child":
        print(MAKERS[sys.argv[2]](int(sys.argv[3])))
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--tui-child":
        asyncio.run(_tui_child(sys.argv[2], sys.argv[3:]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--only", nargs="*", choices=["runs", "events", "message", "fold"])
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs (wall times include waiting for a CPU)")
    wanted = set(args.only or ["runs", "events", "message", "fold"])
    if "runs" in wanted:
        bench_runs(args.runs)
    if "events" in wanted:
        bench_events(args.events)
    if "message" in wanted:
        bench_message(args.mb)
    if "fold" in wanted:
        bench_fold(args.steps)
    print(f"\nload average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
