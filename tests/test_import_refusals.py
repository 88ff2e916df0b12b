"""A format's refusal says what it looked for and what it found, truthfully: run every file
through every format's sniff, and no two refusals of one file may contradict each other
(one saying the file has a key another says it lacks, one calling it JSON and another
not), nor what the file holds.

Refusals name keys in quotes and follow a few phrasings this test reads: ``no 'K'`` /
``no top-level 'K'`` (absent), ``has 'K'`` / ``has a top-level 'K'`` / ``a top-level 'K'``
(present), ``not JSON`` / ``neither JSON nor ...`` (not JSON) and ``JSON objects`` / ``a JSON
array`` / ``JSON, ...`` (JSON).
"""

from __future__ import annotations

import re

import pytest
from test_import_support import IMPORT_FIXTURES

from agentdbg import importers
from agentdbg.importers.sniffing import looks_like_json, outline

# "no 'A'", "no top-level 'A' or 'B'", "no 'A', 'B' or 'C'": every key listed is absent.
_ABSENT = re.compile(r"(?<![\w-])no (?:top-level )?'[^']+'(?:(?:, | or | nor )'[^']+')*")
_QUOTED = re.compile(r"'([^']+)'")
_PRESENT = re.compile(r"(?<!no )(?:\bhas (?:a )?(?:top-level )?|(?:^|[\s(])a top-level )'([^']+)'")
_NOT_JSON = re.compile(r"(?:neither |not )JSON(?:$|[,:;( ])(?!Lines)")
_JSON = re.compile(r"(?:JSON objects|a JSON array|JSON)(?:$|[ ,:;(])")

# Heads made to sit on the edges between formats: a key two formats read differently, a
# shape one half right. Each is a file's first bytes as a sniff sees them.
EDGE_HEADS = {
    "history of events": '{"instance_id": "x", "history": [{"id": 1, "source": "agent", "action": "run"}]}\n',
    "history of messages": '{"history": [{"role": "user", "content": "hi"}]}',
    "history of nothing": '{"history": []}',
    "trajectory only": '{"trajectory": []}',
    "info.exit_status only": '{"messages": [{"role": "user", "content": "x"}], "info": {"exit_status": "Submitted"}}',
    "trajectory_format other": '{"trajectory_format": "other-1", "messages": []}',
    "steps in records": '[{"steps": [{"text": "x"}]}]',
    "top-level steps": '{"steps": []}',
    "system beside roleless messages": '{"system": "s", "messages": [{"content": "x"}]}',
    "claude entries of other types": '{"type": "summary", "message": {"role": "user"}, "sessionId": "s"}\n'
                                     '{"type": "progress", "sessionId": "s"}\n',
    "codex types without payload": '{"type": "session_meta", "timestamp": "t"}\n{"type": "event_msg"}\n',
    "sessionId in an array": '[{"sessionId": "s", "projectHash": "p", "messages": []}]',
    "one numbered thought": "Question: q\nThought 1: hmm\n",
    "numbered thought and observation": "Question: q\nThought 1: a\nObservation 1: b\n",
    "one numbered action": "Question: q\nAction 1: Search[x]\n",
    "text starting with a bracket": "[12:00] Thought: I look.\nAction: search[x]\nObservation: y\n",
    "question only": "Question: how?\n",
    "plain text": "hello\n",
    "empty object": "{}",
    "empty array": "[]",
    "eval without version": '{"eval": {"task": "t", "run_id": "r"}}',
    "tau records without traj": '[{"task_id": 1, "reward": 1.0}]',
    "sources of other kinds": '[{"id": 1, "source": "robot", "action": "run"}]',
    "a zip of something else": "PK\x03\x04" + "\x00" * 26 + "word/document.xml",
}


def _files() -> list:
    roots = [IMPORT_FIXTURES]
    return sorted(p for root in roots for p in root.rglob("*")
                  if p.is_file() and p.suffix not in (".md",) and "LICENSES" not in p.parts)


def _claims(reason: str) -> tuple[set[str], set[str], bool | None]:
    absent = {key for said in _ABSENT.findall(reason) for key in _QUOTED.findall(said)}
    present = set(_PRESENT.findall(reason))
    json_said = False if _NOT_JSON.match(reason) else True if _JSON.match(reason) else None
    return absent, present, json_said


def _has(head: str, key: str) -> bool:
    shape = outline(head)
    path = tuple(key.split("."))
    return shape.has(*path) or shape.has("*", *path)


def contradictions(head: str | bytes) -> list[str]:
    """Every contradiction among the refusals of ``head``, and between them and the file."""
    text = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    refusals = [(name, reason) for name, ok, reason in importers.sniff_all(head) if not ok]
    found: list[str] = []
    said_absent: dict[str, str] = {}
    said_present: dict[str, str] = {}
    is_json = looks_like_json(text) and not text.startswith("PK\x03\x04")
    for name, reason in refusals:
        absent, present, json_said = _claims(reason)
        for key in absent:
            said_absent.setdefault(key, name)
            if _has(text, key):
                found.append(f"{name} says there is no {key!r}, but the file has one: {reason}")
        for key in present:
            said_present.setdefault(key, name)
            if not _has(text, key):
                found.append(f"{name} says the file has {key!r}, but it has none: {reason}")
        if json_said is not None and json_said != is_json:
            found.append(f"{name} calls the file {'JSON' if json_said else 'not JSON'}: {reason}")
    for key in said_absent.keys() & said_present.keys():
        found.append(f"{said_absent[key]} says there is no {key!r}, {said_present[key]} that there is one")
    return found


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(IMPORT_FIXTURES)))
def test_no_two_refusals_of_a_fixture_contradict(path):
    assert contradictions(path.read_bytes()[: importers.HEAD_BYTES]) == []


@pytest.mark.parametrize("name", sorted(EDGE_HEADS))
def test_no_two_refusals_of_an_edge_case_contradict(name):
    assert contradictions(EDGE_HEADS[name]) == []


def test_real_runs_from_elsewhere_too(shared_fixtures):
    files = sorted(p for p in shared_fixtures.rglob("*") if p.is_file() and p.name != "LICENSE")
    if not files:
        pytest.skip(f"{shared_fixtures} not found")
    for path in files:
        assert contradictions(path.read_bytes()[: importers.HEAD_BYTES]) == [], path


def test_the_checker_sees_a_contradiction():
    """The checker itself: two made-up refusals that disagree are caught."""
    assert _claims("no top-level 'history'") == ({"history"}, set(), None)
    assert _claims("no top-level 'trajectory' or 'history'") == ({"trajectory", "history"}, set(), None)
    assert _claims("has a top-level 'history': a trajectory's record") == (set(), {"history"}, None)
    assert _claims("not JSON") == (set(), set(), False)
    assert _claims("neither JSON nor a zip archive") == (set(), set(), False)
    assert _claims("not JSON Lines") == (set(), set(), None)
    assert _claims("a JSON array, not an object") == (set(), set(), True)


def test_openhands_evaluation_output_is_not_said_to_lack_its_history():
    """OpenHands' output.jsonl has a top-level 'history' of events: a format that refuses it
    says so, none says it has no history."""
    head = (IMPORT_FIXTURES / "openhands" / "output.jsonl").read_bytes()[: importers.HEAD_BYTES]
    reasons = {name: reason for name, ok, reason in importers.sniff_all(head) if not ok}
    assert "history" in reasons["swe-agent"] and "role" in reasons["swe-agent"]
    assert not any("history" in _claims(r)[0] for r in reasons.values())
    assert "'history'" in reasons["openai-chat"]
