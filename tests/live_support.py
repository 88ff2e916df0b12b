"""Helpers for the live tests: a trace written step by step by another process, on cue,
and an agent loop recorded with the debugger's channel (no tests here)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "sample_plans"

# Writes the plan's run to argv[1], holding the writer's lock: the run_start first, then
# one step per line read from stdin ("cut" writes half of the next line instead and stops
# there); an empty stdin writes the rest. "bye" on stdin releases the file.
WRITER = r"""
import sys
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.trace import format as fmt
from agentdbg.trace.writer import TraceWriter

path, plan = sys.argv[1], sys.argv[2]
chunks = [[]]
for event in load_plan(plan).run().events:
    if isinstance(event, ev.StepStart):
        chunks.append([])
    chunks[-1].append(event)
with TraceWriter(path, mode="replace") as writer:
    writer.write_all(chunks.pop(0))
    print("ready", flush=True)
    for command in sys.stdin:
        command = command.strip()
        if command == "bye":
            break
        if command == "cut":
            line = fmt.event_line(chunks[0][0]).encode()
            writer._file.write(line[: len(line) // 2])
            print("cut", flush=True)
            continue
        if chunks:
            writer.write_all(chunks.pop(0))
        print(f"left {len(chunks)}", flush=True)
    else:
        for chunk in chunks:
            writer.write_all(chunk)
print("done", flush=True)
"""


class SlowWriter:
    """A trace being written by another process, a step at a time on cue."""

    def __init__(self, path: Path, plan: str = "library_hallucinating.toml"):
        self.path = path
        self.process = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(PLANS / plan)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "ready"

    def send(self, command: str = "step") -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def step(self, count: int = 1) -> None:
        for _ in range(count):
            assert self.send().startswith("left")

    def finish(self) -> None:
        """Release the file (the rest of the run stays unwritten unless stepped)."""
        if self.process.poll() is None:
            self.send("bye")
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(30)
        for stream in (self.process.stdin, self.process.stdout):
            if not stream.closed:
                stream.close()

    def __enter__(self) -> SlowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        self.close()


# A user's loop recorded with attach=argv[2] and pause_timeout=argv[3]: search("a"),
# search("missing") (a KeyError: a tool error), search("b"), then the answer. After each
# call it appends "after N" to the marker file argv[4], so a test sees when the agent
# really went on.
AGENT = r"""
import sys
import agentdbg

path, attach, timeout, marker = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]

def search(title: str) -> int:
    '''Copies of a title.'''
    return {"a": 5, "b": 3}[title]

def note(text):
    with open(marker, "a") as handle:
        handle.write(text + "\n")

with agentdbg.record(path, task="How many copies?", tools=[search], attach=attach, pause_timeout=timeout,
                     mode="replace") as rec:
    print("recording", flush=True)
    for title in ["a", "missing", "b"]:
        step = rec.call("search", {"title": title})
        note(f"after {step.number}")
    rec.answer("5")
note("done")
print("done", flush=True)
"""


def start_agent(path: Path, marker: Path, attach: str = "wait", pause_timeout: float = 30.0) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", AGENT, str(path), attach, str(pause_timeout), str(marker)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "recording", process.stderr.read()
    return process


def marks(marker: Path) -> list[str]:
    return marker.read_text().splitlines() if marker.exists() else []


async def until(pilot, condition, timeout: float = 10.0, what: str = "") -> None:
    """Let the app run until ``condition()`` holds (fails after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.02)
