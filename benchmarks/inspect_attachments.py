"""What an Inspect AI log that repeats one big attachment costs `agentdbg stats`: with the
importer's budget for repeated attachment text, and with it lifted (as every reference
was put back before), in the same run.

The log (written here, about 1.4 MB) holds one attachment of 1,000,000 characters and
REFS references to it: each assistant turn names it in a reasoning part and in its text
(the thought is made of both, so each reference becomes text of its own), and each tool
reply is short. Each measurement is `agentdbg stats` in a child process of its own; it
prints wall time and the child's peak RSS, beside the baseline of a child that only
parses the log's JSON. No assertion: figures to watch.

    python benchmarks/inspect_attachments.py [REFS] [--size CHARS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIFTED = "import agentdbg.importers.inspect_ai as m; m.MAX_REPEATED_CHARS = m.MAX_REFERENCE_CHARS = 1 << 62; "
STATS = "import sys; from agentdbg.cli import main; sys.exit(main(['stats', sys.argv[1]]))"
PARSE = "import json, sys; json.loads(open(sys.argv[1], 'rb').read())"


def write_log(path: Path, references: int, size: int) -> None:
    turns = references // 2
    key = "a" * 32
    messages: list[dict] = [{"role": "user", "source": "input", "content": "What is in the file?"}]
    for n in range(turns):
        messages.append({"role": "assistant", "source": "generate",
                         "content": [{"type": "reasoning", "reasoning": f"attachment://{key}"},
                                     {"type": "text", "text": f"attachment://{key}"}],
                         "tool_calls": [{"id": f"c{n}", "function": "read", "arguments": {"path": "f"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "function": "read", "content": "ok"})
    log = {"version": 2, "status": "success", "eval": {"task": "repeats", "model": "m"},
           "samples": [{"id": 1, "epoch": 1, "input": "What is in the file?", "messages": messages,
                        "attachments": {key: "x" * size}}]}
    path.write_text(json.dumps(log), encoding="utf-8")


def run_child(code: str, path: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in MB) of ``python -c CODE PATH`` in a child process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    error = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"the child failed ({os.waitstatus_to_exitcode(status)}):\n{error[-2000:]}")
    return wall, usage.ru_maxrss // 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("refs", nargs="?", type=int, default=2_000, help="references to the attachment (default 2,000)")
    parser.add_argument("--size", type=int, default=1_000_000, help="the attachment's characters (default 1,000,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "repeats.json"
        write_log(path, args.refs, args.size)
        print(f"log: {path.stat().st_size / 1e6:.1f} MB, {args.refs:,} references to one attachment of "
              f"{args.size:,} characters ({args.refs * args.size / 1e9:.1f} G characters if all were put back)")
        rows = [("parse the JSON only (baseline)", PARSE), ("stats, the budget lifted (as before)", LIFTED + STATS),
                ("stats, with the budget", STATS)]
        baseline = None
        for label, code in rows:
            wall, peak = run_child(code, path)
            baseline = baseline or peak
            print(f"{label:40} {wall:6.2f} s  peak RSS {peak:6,} MB  ({peak / baseline:.1f}x the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
