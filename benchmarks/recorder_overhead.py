"""What recording a step of a user's own loop costs, against writing the same events
straight through TraceWriter (the least the recorder can do: the file, its lock, its
checkpoints), both in one process and to the same kind of file:

  writer      the events of N tool-call steps, made up front, written with TraceWriter
  recorder    the same N steps recorded with rec.action(...).observe(...) (guard counters,
              repeat signatures, the step queue)
  call        the same N steps with rec.call(...): the tool run through the engine's
              registry (no time limit), as a loop would
  attach      the same as call, recorded with attach=True and no debugger attached: what
              listening for one costs an agent nobody is watching

and prints the time per step and the ratio to the writer. No assertion: figures to watch.

    python benchmarks/recorder_overhead.py [--steps 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import agentdbg
from agentdbg.engine import events as ev
from agentdbg.trace.writer import TraceWriter


def lookup(title: str) -> str:
    """A title's shelf."""
    return f"shelf {len(title)}"


def writer_events(steps: int) -> list[ev.Event]:
    events: list[ev.Event] = [ev.RunStart(step=0, task="t")]
    for n in range(1, steps + 1):
        title = f"title {n % 97}"
        events += [ev.StepStart(step=n), ev.Thought(step=n, text="I look it up."),
                   ev.ActionTaken(step=n, tool="lookup", args={"title": title}, call=f"lookup({{'title': {title!r}}})"),
                   ev.Observation(step=n, text=lookup(title)),
                   ev.GuardCounters(step=n, steps=[n, None], repeats=[1, None], tokens=[n * 30, None], step_tokens=30)]
    events.append(ev.RunEnd(step=steps, outcome="unfinished", steps=steps))
    return events


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    steps = parser.parse_args().steps
    folder = Path(tempfile.mkdtemp(prefix="agentdbg-recorder-"))
    events = writer_events(steps)

    def with_writer() -> None:
        with TraceWriter(folder / "writer.jsonl", mode="replace") as writer:
            writer.write_all(events)

    def with_recorder() -> None:
        with agentdbg.record(folder / "recorder.jsonl", task="t", tools=[lookup], mode="replace") as rec:
            for n in range(1, steps + 1):
                title = f"title {n % 97}"
                rec.action("lookup", {"title": title}, thought="I look it up.", tokens=30).observe(lookup(title))

    def with_call() -> None:
        with agentdbg.record(folder / "call.jsonl", task="t", tools=[lookup], mode="replace") as rec:
            for n in range(1, steps + 1):
                rec.call("lookup", {"title": f"title {n % 97}"}, thought="I look it up.", tokens=30)

    def with_attach() -> None:
        with agentdbg.record(folder / "attach.jsonl", task="t", tools=[lookup], mode="replace", attach=True) as rec:
            for n in range(1, steps + 1):
                rec.call("lookup", {"title": f"title {n % 97}"}, thought="I look it up.", tokens=30)

    baseline = timed(with_writer)
    print(f"{steps:,} steps, one tool call each")
    print(f"  writer    {baseline / steps * 1e6:8.1f} µs/step  (baseline)")
    for label, fn in (("recorder", with_recorder), ("call", with_call), ("attach", with_attach)):
        took = timed(fn)
        print(f"  {label:<9} {took / steps * 1e6:8.1f} µs/step  {took / baseline:5.2f}× the writer")


if __name__ == "__main__":
    main()
