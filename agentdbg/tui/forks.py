"""The runs the debugger lists: the file's, then the forks made in this session (E), and
where forks branch off a run (the timeline marks those steps)."""

from __future__ import annotations

from collections.abc import Sequence

SCANNED_RUNS = 200  # a file with more runs: only this session's forks are looked at for marks


class RunsWithForks(Sequence):
    """``document.runs`` (which may grow while a file is read) followed by ``forks``."""

    def __init__(self, runs: Sequence, forks: list):
        self.file_runs = runs
        self.forks = forks

    def __len__(self) -> int:
        return len(self.file_runs) + len(self.forks)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        count = len(self.file_runs)
        if index < 0:
            index += len(self)
        if 0 <= index < count:
            return self.file_runs[index]
        if count <= index < count + len(self.forks):
            return self.forks[index - count]
        raise IndexError(f"no run {index + 1}")


def fork_marks(runs: Sequence, index: int) -> dict[int, str]:
    """{step: "edited"} where run ``index`` is a fork, {step: "branch"} where a fork of it
    branches off."""
    marks: dict[int, str] = {}
    indexes = range(len(runs)) if len(runs) <= SCANNED_RUNS else \
        range(len(getattr(runs, "file_runs", runs)), len(runs))
    for other in indexes:
        if other == index:
            continue
        fork = _fork(runs[other])
        if fork and fork.get("parent") == index + 1 and isinstance(fork.get("step"), int):
            marks.setdefault(fork["step"], "branch")
    own = _fork(runs[index])
    if own and isinstance(own.get("step"), int):
        marks[own["step"]] = "edited"
    return marks


def _fork(run) -> dict | None:
    try:
        fork = run.info.fork
    except (AttributeError, IndexError, ValueError, OSError):
        return None
    return fork if isinstance(fork, dict) else None
