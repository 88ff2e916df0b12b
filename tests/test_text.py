"""Untrusted text is made harmless for a terminal, and nothing else is changed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdbg.text import one_line, sanitize, shorten


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[2J\x1b[Hcleared", "cleared"),
        ("up\x1b[1A\x1b[2Kover", "upover"),
        ("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),
        ("\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", "click"),
        ("\x1b]52;c;ZXZpbA==\x07copied", "copied"),
        ("\x1b]0;title\x07text", "text"),
        ("\x1bPdevice control\x1b\\after", "after"),
        ("\x1b_application\x1b\\after", "after"),
        ("\x9b31mred", "red"),
        ("\x9d52;c;ZXZpbA==\x9cafter", "after"),
        ("a\x1b7b\x1b8c", "abc"),
        ("a\x1b(Bb", "ab"),
        ("a\x1bcb", "ab"),
        ("lone escape at the end\x1b", "lone escape at the end"),
        ("bell\x07 backspace\x08 nul\x00 del\x7f", "bell backspace nul del"),
        ("carriage\rreturn", "carriagereturn"),
        ("windows\r\nline", "windows\nline"),
        ("\x85next line \x9c string terminator", "next line  string terminator"),
    ],
)
def test_control_sequences_are_removed(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


def test_unterminated_osc_swallows_the_rest_like_a_terminal_would() -> None:
    # A terminal would treat everything after an unterminated OSC as its payload.
    assert sanitize("before\x1b]52;c;never terminated") == "before"


@pytest.mark.parametrize(
    "text",
    [
        "plain ASCII, [bold]not markup[/bold], $HOME and {braces}",
        "tabs\tand\nnewlines stay",
        "Il Gattopardo è un romanzo — «citazione» ✓ 漢字 مرحبا 🙂",
        "combining: e\u0301 and zero width joiner: 👩\u200d💻",
        "",
    ],
)
def test_printable_text_is_unchanged(text: str) -> None:
    assert sanitize(text) == text


@given(st.text())
def test_output_never_contains_control_characters(text: str) -> None:
    out = sanitize(text)
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in out)


@given(st.text())
def test_sanitize_is_idempotent(text: str) -> None:
    once = sanitize(text)
    assert sanitize(once) == once


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc",))))
def test_text_without_controls_is_kept_exactly(text: str) -> None:
    assert sanitize(text) == text


def test_non_string_input_is_shown_as_text() -> None:
    assert sanitize(42) == "42"


def test_one_line_flattens_and_cuts() -> None:
    assert one_line("a\nb\tc") == "a ⏎ b c"
    assert one_line("abcdefghij", 5) == "abcd…"
    assert one_line("\x1b[31mshort\x1b[0m", 10) == "short"


def test_shorten_says_how_much_was_left_out() -> None:
    assert shorten("abc", 10) == "abc"
    assert shorten("x" * 1010, 10) == "xxxxxxxxxx… [1,000 more characters]"


def test_text_module_does_not_import_rich() -> None:
    code = "import sys, agentdbg.text; print('rich' in sys.modules or 'textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_flat_puts_untrusted_text_on_one_short_line():
    from agentdbg.text import flat

    assert flat("a\n  b\t\x1b[31mc\x1b[0m") == "a b c"
    assert flat("x" * 10, 5) == "xxxx…"
    assert flat(42) == "42"
