"""Big imports stream: ``agentdbg convert`` on a ~1 GB file of a format that streams, its
wall time, throughput and peak RSS, against baselines measured in the same run.

Two formats, generated into a temporary folder (deleted at the end):

  jsonl   OpenHands evaluation output (output.jsonl): one instance a line, each a run
  array   tau-bench results: one pretty-printed JSON array of result records, each a run

For each: ``convert`` of the big file (streamed: one run in memory at a time); on a
SMALL-MB file cut from the same records, ``convert`` streamed and the whole-file path
(``importers.convert_file`` + ``write_trace``, what convert did before); and the cost
of just reading the big file: ``wc -l``, and the JSON parse alone (json.loads of each
line; the stream reader's elements of the array). Each measurement is a fresh process:
its wall time, CPU time and peak RSS (``os.wait4``'s ru_maxrss, that child's alone).

No assertion: figures (the target is a peak RSS of at most 300 MB on the big files).

    python benchmarks/import_streaming.py [--mb 1024] [--small-mb 100] [--only jsonl|array] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENTDBG = [sys.executable, "-m", "agentdbg"]
MB = 1024 * 1024
TARGET_RSS_MB = 300

WHOLE_FILE_CONVERT = """
import sys
from agentdbg import importers
from agentdbg.trace.writer import write_trace
name, result = importers.convert_file(sys.argv[1])
write_trace(sys.argv[2], result.runs, header={"source": sys.argv[1], "source_format": name})
"""
PARSE_LINES = """
import json, sys
with open(sys.argv[1], "rb") as f:
    n = sum(1 for line in f if line.strip() and json.loads(line) is not None)
"""
PARSE_ARRAY = """
import sys
from agentdbg.importers.streaming import StreamReader
with StreamReader(sys.argv[1]) as reader:
    n = sum(1 for _ in reader.array_items())
"""
PARSE_WHOLE = """
import json, sys
with open(sys.argv[1], "rb") as f:
    json.loads(f.read())
"""


def instance(n: int) -> dict:
    """An OpenHands evaluation instance of 12 steps (about 20 KB as a line)."""
    history = [{"id": 0, "source": "user", "action": "message", "message": f"Fix issue {n}: " + "details " * 200,
                "args": {"content": f"Fix issue {n}"}}]
    for step in range(12):
        call = 1 + 2 * step
        history.append({"id": call, "source": "agent", "action": "run", "message": f"Running step {step}",
                        "args": {"command": f"grep -rn pattern_{step} src/ | head -{step + 5}", "thought": "look " * 40}})
        history.append({"id": call + 1, "source": "environment", "observation": "run", "cause": call,
                        "content": f"src/module_{step}.py:{step}: match\n" * 30, "extras": {"exit_code": 0}})
    history.append({"id": 99, "source": "agent", "action": "finish", "args": {"final_thought": "Done."}, "message": "Done."})
    return {"instance_id": f"repo__issue-{n}", "instruction": f"Fix issue {n}", "history": history,
            "metadata": {"agent_class": "CodeActAgent", "max_iterations": 30, "llm_config": {"model": "gpt-4o"}},
            "metrics": {"accumulated_cost": 0.12, "accumulated_token_usage": {"prompt_tokens": 9000, "completion_tokens": 800}},
            "test_result": {"git_patch": "diff --git a/x b/x\n-a\n+b\n", "report": {"resolved": n % 3 == 0}}}


def result(n: int) -> dict:
    """A tau-bench result record of 10 tool calls (about 12 KB pretty-printed)."""
    traj = [{"role": "system", "content": "You are an airline agent. " * 40},
            {"role": "user", "content": f"I want to change reservation {n}."}]
    for step in range(10):
        traj.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}_{step}", "type": "function",
             "function": {"name": "get_reservation_details", "arguments": json.dumps({"reservation_id": f"R{n}{step}"})}}]})
        traj.append({"role": "tool", "tool_call_id": f"call_{n}_{step}", "name": "get_reservation_details",
                     "content": json.dumps({"reservation_id": f"R{n}{step}", "flights": ["HAT001"] * 5, "cabin": "economy"})})
    traj.append({"role": "assistant", "content": f"Reservation {n} is changed."})
    return {"task_id": n, "reward": float(n % 2), "trial": 0, "traj": traj,
            "info": {"task": {"user_id": f"user_{n}", "instruction": "change it", "outputs": []}}}


def write_jsonl(path: Path, size: int) -> int:
    count = 0
    with open(path, "w") as out:
        while out.tell() < size:
            out.write(json.dumps(instance(count)) + "\n")
            count += 1
    return count


def write_array(path: Path, size: int) -> int:
    count = 0
    with open(path, "w") as out:
        out.write("[\n")
        while out.tell() < size:
            out.write((",\n" if count else "") + json.dumps(result(count), indent=2))
            count += 1
        out.write("\n]\n")
    return count


def measure(argv: list[str]) -> dict:
    """Wall and CPU seconds and peak RSS (MB) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024,
            "code": os.waitstatus_to_exitcode(status), "stderr": stderr.splitlines()[-1:]}


def report(label: str, figures: dict, size: int, baseline: dict | None = None) -> None:
    rate = size / MB / figures["wall"] if figures["wall"] else 0.0
    ratio = ""
    if baseline:  # per MB, so that files of different sizes compare
        ratio = (f"  RSS {figures['rss'] / baseline['rss']:5.2f}x, MB/s {rate / baseline['rate']:5.2f}x "
                 "the baseline's")
    figures["rate"] = rate
    code = f"  exit {figures['code']}: {' '.join(figures['stderr'])}" if figures["code"] else ""
    print(f"  {label:<46} {figures['wall']:7.2f} s {figures['cpu']:7.2f} s CPU {rate:7.1f} MB/s "
          f"{figures['rss']:8.1f} MB RSS{ratio}{code}", flush=True)


def bench(kind: str, folder: Path, big_mb: int, small_mb: int) -> dict:
    suffix, writer, parse = {"jsonl": (".jsonl", write_jsonl, PARSE_LINES),
                             "array": (".json", write_array, PARSE_ARRAY)}[kind]
    big, small = folder / f"big{suffix}", folder / f"small{suffix}"
    started = time.perf_counter()
    runs = writer(big, big_mb * MB)
    writer(small, small_mb * MB)
    big_size, small_size = big.stat().st_size, small.stat().st_size
    print(f"{kind}: {big_size / MB:.0f} MB, {runs:,} runs (written in {time.perf_counter() - started:.0f} s); "
          f"small file {small_size / MB:.0f} MB", flush=True)
    out = folder / "out.jsonl"
    figures = {}
    figures["whole"] = measure([sys.executable, "-c", WHOLE_FILE_CONVERT, str(small), str(out)])
    report(f"whole-file convert, {small_size / MB:.0f} MB (baseline)", figures["whole"], small_size)
    figures["small"] = measure([*AGENTDBG, "convert", str(small), "-o", str(out), "--force"])
    report(f"streamed convert, {small_size / MB:.0f} MB", figures["small"], small_size, figures["whole"])
    if kind == "array":
        figures["parse_whole"] = measure([sys.executable, "-c", PARSE_WHOLE, str(small)])
        report(f"json.loads of the {small_size / MB:.0f} MB file", figures["parse_whole"], small_size)
    figures["wc"] = measure(["wc", "-l", str(big)])
    report(f"wc -l, {big_size / MB:.0f} MB", figures["wc"], big_size)
    figures["parse"] = measure([sys.executable, "-c", parse, str(big)])
    report(f"JSON parse only ({'json.loads per line' if kind == 'jsonl' else 'stream reader'}), "
           f"{big_size / MB:.0f} MB", figures["parse"], big_size)
    figures["big"] = measure([*AGENTDBG, "convert", str(big), "-o", str(out), "--force"])
    report(f"streamed convert, {big_size / MB:.0f} MB", figures["big"], big_size, figures["whole"])
    verdict = "within" if figures["big"]["rss"] <= TARGET_RSS_MB and not figures["big"]["code"] else "OVER"
    print(f"  -> peak RSS {figures['big']['rss']:.0f} MB on {big_size / MB:.0f} MB: {verdict} the "
          f"{TARGET_RSS_MB} MB target; trace written {out.stat().st_size / MB:.0f} MB", flush=True)
    for path in (big, small, out):
        path.unlink(missing_ok=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the big files (default 1024)")
    parser.add_argument("--small-mb", type=int, default=100, help="size of the baseline files (default 100)")
    parser.add_argument("--only", choices=["jsonl", "array"], action="append", help="one format only")
    parser.add_argument("--dir", type=Path, help="where to write the files (default: the temporary folder)")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.gettempdir())
    needed = (args.mb * 3 + args.small_mb * 3) * MB  # the input, the trace written, the small pair
    free = shutil.disk_usage(base).free
    if free < needed:
        print(f"{base}: {free / MB:.0f} MB free, {needed / MB:.0f} MB needed; give --dir or a smaller --mb")
        return 2
    folder = Path(tempfile.mkdtemp(prefix="agentdbg-bench-", dir=base))
    try:
        for kind in args.only or ["jsonl", "array"]:
            bench(kind, folder, args.mb, args.small_mb)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
