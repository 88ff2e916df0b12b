"""Hostile text in a saved run of any format (markup, ANSI, OSC 8 links, OSC 52 clipboard
writes) reaches the terminal inert through ``show``: it is in the events verbatim (each
format's tests check that), and printed without a control character."""

from __future__ import annotations

import pytest
from test_import_support import IMPORT_FIXTURES

from agentdbg.cli import main

HOSTILE = sorted(IMPORT_FIXTURES.glob("*/hostile*"))


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_show_prints_hostile_text_without_control_characters(path, capsys):
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    controls = sorted({f"U+{ord(c):04X}" for c in out if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0})
    assert controls == []
