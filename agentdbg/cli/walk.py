"""The files a command over many inputs reads: the files named, and every file under the
folders named, sorted by path.

A folder is walked recursively. Symbolic links to folders are followed once: a folder
already walked (a link loop, or two links to one folder) is not walked again. Files and
folders whose names start with ``.`` (``.git``, ``.venv``) are not looked at, nor are
agentdbg's own files beside a trace (``FILE.breakpoints.json``, the attach socket). A named
pipe, a device or a socket found in a folder is skipped with a note; named on the command
line it is refused, as every command refuses it. The same file reached twice (a link) is
read once.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from agentdbg.files import kind_of

# agentdbg's own files beside a trace: never runs.
_OWN_FILES = re.compile(r".*\.breakpoints(?:\.\d+)?\.json|.*\.agentdbg\.sock")


@dataclass
class Inputs:
    files: list[str] = field(default_factory=list)  # to read, sorted by path
    named: set[str] = field(default_factory=set)  # those named on the command line
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): a note
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, why): trouble

    @property
    def folders_named(self) -> bool:
        return len(self.files) != len(self.named)


def collect(paths: list[str]) -> Inputs:
    """Every file to read under ``paths`` (files and folders), sorted by path."""
    found = Inputs()
    seen_files: set[tuple[int, int]] = set()
    seen_dirs: set[tuple[int, int]] = set()
    files: list[str] = []

    def add_file(path: str, info: os.stat_result) -> None:
        key = (info.st_dev, info.st_ino)
        if key not in seen_files:
            seen_files.add(key)
            files.append(path)

    def walk(folder: str, info: os.stat_result) -> None:
        key = (info.st_dev, info.st_ino)
        if key in seen_dirs:
            return  # a link back up the tree, or a second link to a folder already read
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError as exc:
            found.skipped.append((folder, f"folder not read: {exc.strerror or exc}"))
            return
        for entry in entries:
            if entry.name.startswith(".") or _OWN_FILES.fullmatch(entry.name):
                continue
            try:
                entry_info = os.stat(entry.path)  # follows a link: where it points decides
            except OSError as exc:
                why = "a broken symbolic link" if entry.is_symlink() else (exc.strerror or str(exc))
                found.skipped.append((entry.path, why))
                continue
            if stat.S_ISDIR(entry_info.st_mode):
                walk(entry.path, entry_info)
            elif stat.S_ISREG(entry_info.st_mode):
                add_file(entry.path, entry_info)
            else:
                found.skipped.append((entry.path, f"{kind_of(entry_info.st_mode)}, not read"))

    for path in paths:
        try:
            info = os.stat(path)
        except OSError as exc:
            why = "no such file" if isinstance(exc, (FileNotFoundError, NotADirectoryError)) else \
                f"cannot read: {exc.strerror or exc}"
            found.refused.append((path, why))
            continue
        if stat.S_ISDIR(info.st_mode):
            walk(path, info)
        elif stat.S_ISREG(info.st_mode):
            found.named.add(path)
            add_file(path, info)
        else:
            found.refused.append((path, f"is {kind_of(info.st_mode)}, not a regular file"))
    found.files = sorted(files)
    found.skipped.sort()
    return found
