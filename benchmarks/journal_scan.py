"""What reading a trace's operation journal costs a run appended to it.

A run with keyed tools appended to a trace (``agentdbg record --append``,
``agentdbg.record(mode="append")``) first reads the operation keys of the runs already in
the file (``agentdbg.trace.journal.read_journal``). On the synthetic trace written by
``gen_trace.py``, plus a run of N keyed operations appended to a copy of it, measures in
one process:

  read the lines           every line read and dropped (the floor: the file's I/O)
  decode every line        json.loads of every line (the naive journal)
  read_journal             the journal as agentdbg reads it
  ... and a damaged line   the same with a damaged operation line of --damaged-mb MB
                           appended, cut inside its key (read as text, not decoded)

Prints seconds and ratios to the first. No assertion: figures to watch (target: within a
small factor of reading the lines, far below decoding them).

    python benchmarks/journal_scan.py [STEPS] [--operations N] [--damaged-mb MB]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_trace import ensure_trace  # noqa: E402

from agentdbg.engine import ReActAgent, ScriptedOutputs, Tool, ToolRegistry  # noqa: E402
from agentdbg.trace.journal import read_journal  # noqa: E402
from agentdbg.trace.writer import TraceWriter  # noqa: E402


def timed(job) -> tuple[float, object]:
    started = time.perf_counter()
    result = job()
    return time.perf_counter() - started, result


def read_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as file:
        for _ in file:
            count += 1
    return count


def decode_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as file:
        for line in file:
            json.loads(line)
            count += 1
    return count


def append_keyed_run(path: Path, operations: int) -> None:
    tool = Tool("append_line", "Append a line.", {"line": "str"}, lambda line: f"appended {line}",
                idempotency_key="line")
    outputs = [f'Action: append_line\nAction Input: {{"line": "entry {n}"}}' for n in range(operations)]
    agent = ReActAgent(ScriptedOutputs(outputs + ["Final Answer: done"], "json"), ToolRegistry([tool]),
                       max_steps=operations + 1)
    with TraceWriter(path) as writer:
        agent.run("write the entries", on_event=writer.write)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=100_000)
    parser.add_argument("--operations", type=int, default=1_000, help="keyed operations in the appended run")
    parser.add_argument("--damaged-mb", type=int, default=50, help="the size of the damaged line (0: none)")
    args = parser.parse_args()
    source = ensure_trace(args.steps)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.jsonl"
        shutil.copyfile(source, path)
        append_keyed_run(path, args.operations)
        size = path.stat().st_size
        print(f"{path.name}: {args.steps:,} synthetic steps and {args.operations:,} keyed operations, "
              f"{size / 1e6:.0f} MB")
        floor, lines = timed(lambda: read_lines(path))
        decoded, _ = timed(lambda: decode_lines(path))
        journal_time, journal = timed(lambda: read_journal(path))
        assert len(journal) == args.operations
        print(f"  read the lines     {floor:8.3f} s  ({lines:,} lines)   1.0x")
        print(f"  decode every line  {decoded:8.3f} s  {decoded / floor:8.1f}x")
        print(f"  read_journal       {journal_time:8.3f} s  {journal_time / floor:8.1f}x  ({len(journal):,} keys)")
        if args.damaged_mb:
            with open(path, "ab") as file:  # a key cut short by the end of the file
                file.write(b'{"type":"operation","step":1,"key":"append_line:' + b"x" * (args.damaged_mb << 20))
            damaged_time, journal = timed(lambda: read_journal(path))
            assert journal.lookup("append_line:" + "x" * (args.damaged_mb << 20) + "-17") is not None
            print(f"  ... and a damaged line {damaged_time:4.3f} s  {damaged_time / floor:8.1f}x  "
                  f"({args.damaged_mb} MB, cut inside its key)")


if __name__ == "__main__":
    main()
