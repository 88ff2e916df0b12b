"""Cheap looks at a file's first bytes: is it JSON, which keys does it have, where.

``outline`` tokenises the head of a JSON (or JSON Lines) document without parsing it
whole, so it works on a head cut mid-value: it records every key by its path
(``("messages", "*", "role")``, ``*`` standing for array items) and the short string
values found at each path. Several top-level values (JSON Lines) share the same paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_MAX_DEPTH = 8
_MAX_VALUE = 60


@dataclass
class Outline:
    root: str = ""  # "{", "[" or "" (not JSON)
    keys: set = field(default_factory=set)  # paths of keys
    values: dict = field(default_factory=dict)  # path -> set of short string values

    def has(self, *path: str) -> bool:
        return tuple(path) in self.keys

    def strings(self, *path: str) -> set:
        return self.values.get(tuple(path), set())


def looks_like_json(head: str) -> bool:
    return head.lstrip()[:1] in ("{", "[")


def wrong_root(shape: Outline, wanted: str) -> str:
    """A refusal for a file that is not the JSON a format reads: ``not JSON``, or what it is
    instead (``JSON objects``, one or JSON Lines of them; ``a JSON array``) and ``wanted``."""
    if not shape.root:
        return "not JSON"
    return f"{'JSON objects' if shape.root == '{' else 'a JSON array'}, not {wanted}"


@lru_cache(maxsize=8)
def outline(head: str) -> Outline:
    found = Outline()
    if not looks_like_json(head):
        return found
    found.root = head.lstrip()[0]
    stack: list[list] = []  # frames: [kind, label, expecting_key, current_key]
    path: list[str] = []
    for match in _TOKEN.finditer(head):
        token = match.group()
        if token in ("{", "["):
            if not stack:
                label = None
            else:
                top = stack[-1]
                label = top[3] if top[0] == "{" else "*"
            stack.append([token, label, token == "{", None])
            if label is not None:
                path.append(label)
        elif token in ("}", "]"):
            if stack:
                frame = stack.pop()
                if frame[1] is not None and path:
                    path.pop()
        elif token == ":":
            if stack and stack[-1][0] == "{":
                stack[-1][2] = False
        elif token == ",":
            if stack and stack[-1][0] == "{":
                stack[-1][2] = True
        elif token.startswith('"'):
            if len(path) >= _MAX_DEPTH or not stack:
                continue
            top = stack[-1]
            text = token[1:-1] if len(token) > 1 and token.endswith('"') else token[1:]
            if top[0] == "{" and top[2]:
                top[3] = text
                found.keys.add(tuple(path) + (text,))
            elif len(text) <= _MAX_VALUE:
                where = tuple(path) + ((top[3],) if top[0] == "{" else ("*",))
                found.values.setdefault(where, set()).add(text)
    return found


_NUMBERED = re.compile(r"^[ \t]*(?:Thought|Action|Observation)[ \t]*\d+[ \t]*:", re.M)


def numbered_steps(text: str) -> int:
    """How many ``Thought 1:`` / ``Action 1:`` style lines the text has (the ReAct paper's)."""
    return len(_NUMBERED.findall(text))


# --- text dialects of the ReAct and Reflexion papers' harnesses --------------------------
# Each format's sniff and the formats they resemble (react-paper, transcript) use these, so
# exactly one format accepts a file.

_REFLEXION = re.compile(r"^(?:BEGIN TRIAL \d+|-{3,}[ \t]*BEGIN (?:CORRECT|INCORRECT|HALTED) AGENTS\b)", re.M)
_WEBSHOP_ACTION = re.compile(r"^Action: (?:reset[ \t]*$|(?:search|click)\[)", re.M)
_WEBSHOP_PAGE = re.compile(r"^(?:Webshop|Instruction:)[ \t]*$|^Action: reset[ \t]*$"
                           r"|^Observation: Your score \(min 0\.0, max 1\.0\)", re.M)
_COMMAND = re.compile(r"^> ", re.M)
_ALFWORLD_TASK = re.compile(r"^Your task is to: ", re.M)


def reflexion_log(head: str) -> bool:
    """Reflexion's trial log: ``BEGIN TRIAL n`` or ``--- BEGIN CORRECT AGENTS ---`` lines."""
    return bool(_REFLEXION.search(head))


def webshop_transcript(head: str) -> bool:
    """A WebShop run or example: ``Action: reset`` / ``search[...]`` / ``click[...]`` lines
    and the shop's first page (``Webshop``, ``Instruction:``) or its score line."""
    return bool(_WEBSHOP_ACTION.search(head) and _WEBSHOP_PAGE.search(head))


def alfworld_text(head: str) -> bool:
    """An ALFWorld transcript: ``Your task is to: ...`` and ``> command`` lines."""
    return bool(_ALFWORLD_TASK.search(head)) and len(_COMMAND.findall(head)) >= 2


def prompt_strings(head: str) -> bool:
    """A JSON object whose values are (prompt) strings: no key below the top level, so a
    chat log that quotes a prompt in its messages is not taken for a prompt file."""
    found = outline(head)
    return found.root == "{" and all(len(path) == 1 for path in found.keys) and all(
        len(path) == 1 for path in found.values)


def alfworld_prompts(head: str) -> bool:
    """A JSON file of ALFWorld prompt strings (``\\n> command`` and ``Your task is to:``)."""
    return "\\n> " in head and "Your task is to: " in head
