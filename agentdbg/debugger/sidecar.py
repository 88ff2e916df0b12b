"""Which breakpoints file belongs to a trace or plan, and where its breakpoints are saved.

A trace's live beside it in ``FILE.breakpoints.json``. A plan's go to the user's data
directory (``$XDG_DATA_HOME/agentdbg/breakpoints/NAME-HASH.breakpoints.json``, the hash of
the plan's absolute path): a plan is a source file kept in a repository, which a debugging
session should not litter. A file an earlier agentdbg left beside a plan is read once
when the data directory holds none, and the breakpoints are saved to the new place. A file agentdbg cannot read at that
name (another program's, a newer version, damaged, a symbolic link, a pipe, too large) is
never overwritten: it is kept as it is, and the breakpoints go to ``FILE.breakpoints.2.json``
(then ``.3.json``). Opening reads the first of these names that holds a breakpoints file
agentdbg can read and saves back to it; when none does, nothing is loaded and the first
free name is where the breakpoints go. When every name holds a file agentdbg cannot read,
breakpoints last until the debugger quits.
"""

from __future__ import annotations

import hashlib
import os
import re
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
    migrated_from: Path | None = None  # read from a file beside a plan, saved to ``path`` from now on

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
        try:  # the user's data directory may not exist yet
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ValueError(f"breakpoints not saved: cannot make {self.path.parent}: "
                             f"{exc.strerror or exc}") from exc
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


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agentdbg"


def breakpoints_target(target_path: str | Path, kind: str) -> Path:
    """The name the breakpoints of a file are saved under (``.breakpoints.json`` added):
    the file itself for a trace; for a plan, a name in the user's data directory made of
    the plan's name and a hash of its absolute path (two plans of the same name differ)."""
    target = Path(target_path)
    if kind != "plan":
        return target
    absolute = os.path.abspath(os.path.expanduser(str(target)))
    digest = hashlib.sha256(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(absolute).name)[:60].strip("-.") or "plan"
    return data_dir() / "breakpoints" / f"{stem}-{digest}"


def open_sidecar_for(target_path: str | Path, kind: str) -> Sidecar:
    """The breakpoints of a trace (beside it) or a plan (in the data directory; an
    earlier agentdbg's file beside the plan is read when the data directory has none)."""
    store = breakpoints_target(target_path, kind)
    sidecar = open_sidecar(store)
    if kind != "plan" or sidecar.loaded or sidecar.kept:
        return sidecar
    beside = open_sidecar(target_path)
    if beside.loaded and beside.path is not None:
        sidecar.breakpoints = beside.breakpoints
        sidecar.migrated_from = beside.path
    return sidecar
