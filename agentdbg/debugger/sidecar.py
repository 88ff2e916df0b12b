"""Which breakpoints file belongs to a trace or plan, and where its breakpoints are saved.

They live beside it in ``FILE.breakpoints.json``. A file agentdbg cannot read at that
name (another program's, a newer version, damaged, a symbolic link, a pipe, too large) is
never overwritten: it is kept as it is, and the breakpoints go to ``FILE.breakpoints.2.json``
(then ``.3.json``). Opening reads the first of these names that holds a breakpoints file
agentdbg can read and saves back to it; when none does, nothing is loaded and the first
free name is where the breakpoints go. When every name holds a file agentdbg cannot read,
breakpoints last until the debugger quits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentdbg.debugger.breakpoints import BreakpointSet, sidecar_path

SIDECAR_NAMES = 3  # FILE.breakpoints.json, FILE.breakpoints.2.json, FILE.breakpoints.3.json


def sidecar_paths(target_path: str | Path) -> list[Path]:
    """Every name the breakpoints of ``target_path`` may be kept under, in the order read."""
    first = sidecar_path(target_path)
    stem = first.name.removesuffix(".json")
    return [first] + [first.with_name(f"{stem}.{number}.json") for number in range(2, SIDECAR_NAMES + 1)]


@dataclass
class Sidecar:
    """The breakpoints of one trace or plan and the file they are saved to."""

    target: Path
    path: Path | None  # where they are saved; None when every name is taken by a file kept
    breakpoints: BreakpointSet = field(default_factory=BreakpointSet)  # as read
    kept: dict[Path, str] = field(default_factory=dict)  # each file not read, and why
    loaded: bool = False  # the breakpoints were read from ``path``

    def problems(self) -> list[str]:
        """One line for each file kept unread, the last saying where the breakpoints are."""
        lines = [f"breakpoints not loaded: {reason}; the file is kept as it is" for reason in self.kept.values()]
        if lines:
            lines[-1] += "; " + self.where()
        return lines

    def notice(self) -> str:
        """For the first save: which files were kept, and where the breakpoints went."""
        names = " and ".join(path.name for path in self.kept)
        kept = "is kept as it is" if len(self.kept) == 1 else "are kept as they are"
        return f"{names} cannot be read and {kept}; {self.where(short=True)} (e lists why)"

    def where(self, short: bool = False) -> str:
        if self.path is None:
            return ("breakpoints you set are not saved: every name they may be saved under "
                    "holds a file that cannot be read")
        shown = self.path.name if short else self.path
        if self.loaded:
            return f"breakpoints are read from and saved to {shown}"
        return f"breakpoints you set are saved to {shown}"

    def save(self, breakpoints: BreakpointSet) -> None:
        """Write ``breakpoints`` to this file; ValueError saying why they were not saved."""
        if self.path is None:
            raise ValueError(self.where())
        breakpoints.save(self.path)


def open_sidecar(target_path: str | Path) -> Sidecar:
    """The breakpoints saved for ``target_path`` (see the module's notes); never raises
    for a bad file: each file refused is listed in ``kept``."""
    target = Path(target_path)
    kept: dict[Path, str] = {}
    first_free: Path | None = None
    for path in sidecar_paths(target):
        try:
            loaded = BreakpointSet.read(path)
        except ValueError as exc:
            kept[path] = str(exc)
            continue
        if loaded is None:
            first_free = first_free or path
            continue
        return Sidecar(target, path, loaded, kept, loaded=True)
    return Sidecar(target, first_free, BreakpointSet(), kept)
