"""Paths typed into a debugger served to a web browser stay in the folder served.

``agentdbg serve`` starts each page's debugger with ``--confine FOLDER``: whoever drives
the page may open (o), write (w), compare with (D) and complete names of files in FOLDER
only. A typed path has its links and ``..`` resolved before the check, so a link inside
FOLDER pointing out of it is refused too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentdbg.text import one_line

ALLOW_ANY = "agentdbg serve --allow-any-path lifts this"


@dataclass(frozen=True)
class Confinement:
    root: Path  # absolute, links resolved

    @classmethod
    def to(cls, folder: str | Path) -> Confinement:
        return cls(Path(os.path.realpath(Path(folder).expanduser())))

    def refusal(self, typed: str | Path) -> str | None:
        """None when ``typed`` (relative to the current directory) lies in the root once
        its links and ``..`` are resolved; otherwise why it is refused, in words."""
        shown = one_line(str(typed), 200)
        try:
            target = Path(os.path.realpath(Path(typed).expanduser()))
        except (OSError, RuntimeError, ValueError) as exc:  # a NUL, ~nobody
            return f"{shown}: {one_line(str(exc), 100)}"
        if target == self.root or target.is_relative_to(self.root):
            return None
        return f"{shown} is outside the folder served ({one_line(str(self.root), 200)}): {ALLOW_ANY}"
