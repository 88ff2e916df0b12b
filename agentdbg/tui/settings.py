"""The user's own settings: a keymap file and the theme last chosen.

``$XDG_CONFIG_HOME/agentdbg/keymap.toml`` (``~/.config/agentdbg/keymap.toml``) maps
binding ids to keys, as Posting's keymap does::

    "step.forward" = "j"          # one key
    "step.back" = "k,p"           # or several, comma-separated
    "timeline.page_down" = "space"

``agentdbg keys`` lists every id with its default keys. A bad entry (an unknown id, a
value that is not a key, a key another command of the same screen already has) is
reported with the file, the line and what is wrong, and left out: the other entries
apply and the debugger starts all the same.

The theme (``t``) is remembered in ``$XDG_STATE_HOME/agentdbg/ui.json``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from textual.binding import Binding
from textual.keys import _character_to_key

KEYMAP_NAME = "keymap.toml"
STATE_NAME = "ui.json"
THEMES = ("textual-dark", "textual-light")
MAX_FILE_BYTES = 256 * 1024  # a keymap is a few lines: a huge file is a mistake
# A Textual key name: a printable character, or words joined by _ and + (ctrl+shift+f1).
KEY_NAME = re.compile(r"[a-z0-9]+(?:[_+][a-z0-9]+)*|[!-~]", re.IGNORECASE)


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentdbg"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agentdbg"


@dataclass(frozen=True)
class BindingInfo:
    """A remappable binding: its id, default keys, where it applies and what it does."""

    id: str
    keys: str
    scope: str
    help: str


def binding_catalogue() -> list[BindingInfo]:
    """Every binding with an id: the app's commands, then each pane's and dialog's."""
    from agentdbg.tui import commands
    from agentdbg.tui.screens.approval import ApprovalScreen
    from agentdbg.tui.screens.breakpoints import BreakpointScreen
    from agentdbg.tui.screens.help import HelpScreen
    from agentdbg.tui.screens.lists import RunSwitcher
    from agentdbg.tui.screens.log import LogScreen
    from agentdbg.tui.screens.prompt import ConfirmScreen, PathPromptScreen, PromptScreen
    from agentdbg.tui.screens.whatif import WhatIfScreen
    from agentdbg.tui.widgets.breakpoint_list import BreakpointList
    from agentdbg.tui.widgets.timeline import Timeline

    found = [BindingInfo(c.id, c.keys, "app", c.help) for c in commands.COMMANDS]
    for scope, owner in (("timeline", Timeline), ("breakpoints dialog", BreakpointScreen),
                         ("breakpoint list", BreakpointList), ("runs dialog", RunSwitcher),
                         ("log", LogScreen), ("help", HelpScreen), ("prompt dialogs", PromptScreen),
                         ("path dialogs", PathPromptScreen), ("yes/no questions", ConfirmScreen),
                         ("approval dialog", ApprovalScreen), ("what-if dialog", WhatIfScreen)):
        found.extend(BindingInfo(b.id, b.key, scope, b.description or b.action)
                     for b in _bindings(owner.BINDINGS) if b.id)
    return found


def _bindings(items: Iterable) -> list[Binding]:
    return [item for item in items if isinstance(item, Binding)]


@dataclass
class Settings:
    """What the user set: a keymap (binding id -> keys), its problems, the theme."""

    keymap: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    theme: str | None = None
    state_file: Path | None = None  # where the theme is remembered (None: not remembered)

    @classmethod
    def load(cls, config: Path | None = None, state: Path | None = None) -> Settings:
        """The user's settings; never raises (a problem is listed, the rest applies)."""
        config = config if config is not None else config_dir() / KEYMAP_NAME
        state = state if state is not None else state_dir() / STATE_NAME
        keymap, problems = read_keymap(config)
        return cls(keymap, problems, read_theme(state), state)

    def remember_theme(self, theme: str) -> str | None:
        """Save ``theme`` for next time; the reason when it could not be saved."""
        self.theme = theme
        if self.state_file is None:
            return None
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.state_file.with_name(self.state_file.name + ".tmp")
            temporary.write_text(json.dumps({"theme": theme}) + "\n", encoding="utf-8")
            os.replace(temporary, self.state_file)
        except OSError as exc:
            return f"{self.state_file}: theme not remembered: {exc.strerror or exc}"
        return None


def read_theme(path: Path) -> str | None:
    try:
        if path.is_file() and path.stat().st_size < 4096:
            theme = json.loads(path.read_text(encoding="utf-8")).get("theme")
            return theme if theme in THEMES else None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def read_keymap(path: Path) -> tuple[dict[str, str], list[str]]:
    """The keymap in ``path`` (none when the file does not exist) and its problems, each
    naming the file and line."""
    try:
        if not path.exists():
            return {}, []
        if not path.is_file():
            return {}, [f"{path}: not a regular file: keymap not read"]
        if path.stat().st_size > MAX_FILE_BYTES:
            return {}, [f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB: keymap not read"]
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: keymap not read: {getattr(exc, 'strerror', None) or exc}"]
    return parse_keymap(text, str(path))


def parse_keymap(text: str, name: str = KEYMAP_NAME) -> tuple[dict[str, str], list[str]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return {}, [f"{name}: not TOML, keymap not read: {exc}"]
    if isinstance(data.get("keymap"), dict):  # a [keymap] table is accepted too
        data = {**{k: v for k, v in data.items() if k != "keymap"}, **data["keymap"]}
    catalogue = {info.id: info for info in binding_catalogue()}
    keymap: dict[str, str] = {}
    problems: list[str] = []
    taken: dict[tuple[str, str], str] = {}  # (scope, key) -> id, for clashes
    for binding_id, value in data.items():
        where = f"{name}:{_line_of(text, binding_id)}"
        info = catalogue.get(binding_id)
        if info is None:
            close = [known for known in catalogue if known.split(".")[-1] == binding_id.split(".")[-1]]
            hint = f" (did you mean {', '.join(close[:3])}?)" if close else " (agentdbg keys lists them)"
            problems.append(f"{where}: {binding_id!r} is not a binding id{hint}")
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{where}: {binding_id}: keys must be a string such as \"j\" or \"ctrl+n,down\"")
            continue
        keys = [key.strip() for key in value.split(",")]
        bad = [key for key in keys if not KEY_NAME.fullmatch(key)]
        if bad:
            problems.append(f"{where}: {binding_id}: {bad[0]!r} is not a key name "
                            "(a character, or a name such as ctrl+n, f5, space, question_mark)")
            continue
        keymap[binding_id] = ",".join(_normal(key) for key in keys)
    # A key may be given to one binding of a screen only: to a command whose default it
    # is, unless that command is given other keys too.
    for info in catalogue.values():
        if info.id not in keymap:
            for key in info.keys.split(","):
                taken.setdefault((info.scope, _normal(key)), info.id)
    for binding_id, keys in list(keymap.items()):
        scope = catalogue[binding_id].scope
        clash = next((taken[(scope, key)] for key in keys.split(",") if (scope, key) in taken), None)
        if clash is not None:
            del keymap[binding_id]
            problems.append(f"{name}:{_line_of(text, binding_id)}: {binding_id}: {keys!r} is already "
                            f"{clash}'s key; left as it was (give {clash} another key first)")
            continue
        for key in keys.split(","):
            taken[(scope, key)] = binding_id
    return keymap, problems


def _normal(key: str) -> str:
    """Textual's long name for a one-character key ("?" is question_mark)."""
    return _character_to_key(key) if len(key) == 1 else key


def _line_of(text: str, binding_id: str) -> int:
    """The line where ``binding_id`` is set (1 when it cannot be found)."""
    pattern = re.compile(r"^\s*[\"']?" + re.escape(binding_id) + r"[\"']?\s*=", re.MULTILINE)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def effective_keys(binding_id: str, default: str, keymap: dict[str, str]) -> str:
    return keymap.get(binding_id, default)
