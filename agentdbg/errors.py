"""Errors and problems as data, shared by every layer: opening, reading, importing.

A leaf module (it imports nothing from agentdbg), so any module can name these without
pulling in the code that raises them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OpenError", "Problem"]


class OpenError(ValueError):
    """The input cannot be opened at all (says which file and why)."""


@dataclass(frozen=True)
class Problem:
    """Something wrong in the input: where (file, line) and what. The rest still opens."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"
