"""The operation journal: what each operation key's call returned, so it never runs twice.

The journal is read from events, so the trace is the journal: an ``operation`` event
(written before a keyed call runs) opens an entry, the observation with the same key in
the same step closes it with the result. A key whose entry is closed is answered with the
recorded result; a key whose entry is open (its call started, no result was recorded: the
run was cut off while it ran, or it is still running) is not run again either, since its
effect is unknown. Runs appended to a trace read the earlier runs' entries first
(``agentdbg.trace.journal``), so a re-run never repeats what an earlier run did.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from agentdbg.engine import events as ev

__all__ = ["OperationJournal", "Recorded"]


@dataclass(frozen=True)
class Recorded:
    """One operation: where it ran (``run`` is the run's number in the trace, counted from
    1) and, once known, what it returned."""

    key: str
    run: int
    step: int
    text: str | None = None  # None: started, no result recorded
    error: bool = False

    @property
    def known(self) -> bool:
        return self.text is not None

    def where(self, current_run: int) -> str:
        return f"step {self.step}" if self.run == current_run else f"run {self.run}, step {self.step}"

    def replayed(self, current_run: int) -> dict[str, int]:
        """The ``replayed`` field of an observation that gives this result again."""
        return {"step": self.step} if self.run == current_run else {"run": self.run, "step": self.step}


class OperationJournal:
    """Operation keys and their results, fed the events of a run (or of a trace) in order
    with ``note``. Thread-safe: a recorder's tools may report from other threads."""

    def __init__(self, events: Iterable[ev.Event] = ()):
        self._entries: dict[str, Recorded] = {}
        self._run = 0  # runs seen so far: the current run's number once its run_start is noted
        self._lock = threading.Lock()
        for event in events:
            self.note(event)

    @property
    def run(self) -> int:
        """The number of the run being noted (1 for the first)."""
        return max(self._run, 1)

    def __len__(self) -> int:
        return len(self._entries)

    def note(self, event: ev.Event) -> None:
        if isinstance(event, ev.RunStart):
            with self._lock:
                self._run += 1
        elif isinstance(event, ev.Operation) and event.key:
            with self._lock:
                # The first call with a key is the operation; a later one was a mistake to record.
                self._entries.setdefault(event.key, Recorded(event.key, self.run, event.step))
        elif isinstance(event, ev.Observation) and event.key and event.replayed is None:
            with self._lock:
                entry = self._entries.get(event.key)
                # Only the result of the call that opened the entry closes it (never a refusal's).
                if entry is not None and not entry.known and (entry.run, entry.step) == (self.run, event.step):
                    self._entries[event.key] = Recorded(entry.key, entry.run, entry.step, event.text, event.error)

    def lookup(self, key: str) -> Recorded | None:
        """The operation with this key, or None when no call with it has started."""
        with self._lock:
            return self._entries.get(key)

    def entries(self) -> list[Recorded]:
        with self._lock:
            return list(self._entries.values())
