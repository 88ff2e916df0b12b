"""Untrusted text is made harmless for a terminal, and nothing else is changed."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdbg.text import (
    escape_json,
    escape_visible,
    one_line,
    sanitize,
    sanitize_stream,
    shorten,
    unescape_visible,
)


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


# Characters that draw nothing, shown wherever they stand.
ALWAYS_SHOWN = "\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff\u2028\u2029\u3164\u180e"
DRAWS_NOTHING = re.compile(f"[{ALWAYS_SHOWN}\u200c\u200d\ufe00-\ufe0f\ud800-\udfff\U000e0000-\U000e0fff]")
# Invisible letters and marks: fillers, the grapheme joiner, selectors.
INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef]")
printable = st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp", "Cn")).filter(
    lambda c: not INVISIBLE.match(c))


@given(st.text(alphabet=printable))
def test_text_without_controls_or_invisible_characters_is_kept_exactly(text: str) -> None:
    assert sanitize(text) == text


@pytest.mark.parametrize("char", list(ALWAYS_SHOWN))
@pytest.mark.parametrize("context", ["calc{}", "{}calc", "a{}b", "مر{}حبا", "👩{}💻", "{}"])
def test_bidi_and_zero_width_characters_are_shown(char: str, context: str) -> None:
    shown = f"<U+{ord(char):04X}>"
    assert sanitize(context.format(char)) == context.format(shown)


def test_a_bidi_override_cannot_reverse_what_is_shown() -> None:
    assert sanitize("calc\u202e)x(lave\u202c") == "calc<U+202E>)x(lave<U+202C>"
    assert sanitize("\u2067admin\u2069 \u2066x\u2069") == "<U+2067>admin<U+2069> <U+2066>x<U+2069>"


@pytest.mark.parametrize(
    "text",
    [
        "👩\u200d💻 👨\u200d👩\u200d👧 🏳\ufe0f\u200d🌈 ❤\ufe0f\u200d🔥 👩🏽\u200d🚀 🐻\u200d❄\ufe0f",  # emoji ZWJ sequences
        "می\u200cخواهم",  # Persian: ZWNJ between two letters that must not join
        "क्\u200dष क्\u200cष",  # Devanagari: explicit half form, no conjunct
        "ᠠ\u180bᠣ",  # Mongolian: a free variation selector after a letter
    ],
)
def test_joiners_that_legitimate_text_needs_are_kept(text: str) -> None:
    assert sanitize(text) == text


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("calc\u200d", "calc<U+200D>"),
        ("ca\u200dlc", "ca<U+200D>lc"),
        ("\u200cx", "<U+200C>x"),
        ("👩\u200d\u200d💻", "👩<U+200D><U+200D>💻"),
        ("👩\u200dx", "👩<U+200D>x"),
        ("Ж\u200dЖ", "Ж<U+200D>Ж"),  # Cyrillic does not use joiners
    ],
)
def test_joiners_elsewhere_are_shown(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("❤\ufe0f ☺\ufe0e 1\ufe0f\u20e3 #\ufe0f\u20e3 葛\U000e0100", "❤\ufe0f ☺\ufe0e 1\ufe0f\u20e3 #\ufe0f\u20e3 葛\U000e0100"),
        ("calc\ufe0f", "calc<U+FE0F>"),
        ("bú\ufe0fsqueda", "bú<U+FE0F>squeda"),  # a Latin letter has no variants: a spoof
        ("‼\ufe0f ↔\ufe0f ™\ufe0f 丽\ufe00", "‼\ufe0f ↔\ufe0f ™\ufe0f 丽\ufe00"),
        ("😀\ufe0f\ufe01\U000e0101", "😀\ufe0f<U+FE01><U+E0101>"),  # a run of selectors hides data
        (" \ufe0f", " <U+FE0F>"),
    ],
)
def test_variation_selectors_are_kept_only_after_a_visible_character(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown


def test_tag_characters_are_shown_unless_they_spell_a_flag() -> None:
    england = "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    assert sanitize(f"go {england}!") == f"go {england}!"
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "rm")  # text a model reads and a screen hides
    assert sanitize(f"ok{hidden}") == "ok<U+E0072><U+E006D>"


@pytest.mark.parametrize("surrogate", ["\ud800", "\udbff", "\udc00", "\udfff"])
def test_lone_surrogates_are_shown(surrogate: str) -> None:
    shown = f"<U+{ord(surrogate):04X}>"
    assert sanitize(f"a{surrogate}b") == f"a{shown}b"
    assert one_line(surrogate) == shown


@given(st.text())
def test_output_can_always_be_written_and_hides_nothing(text: str) -> None:
    out = sanitize(text)
    out.encode("utf-8")  # no lone surrogate left
    for match in DRAWS_NOTHING.finditer(out):  # only joiners and selectors that join, and flags
        assert match.group() in "\u200c\u200d\ufe0f\ufe0e" or match.group() >= "\U000e0000", repr(out)


@given(st.text())
def test_json_escaping_round_trips_exactly(text: str) -> None:
    dumped = escape_json(json.dumps({"k" + text: [text]}, ensure_ascii=False))
    assert json.loads(dumped) == {"k" + text: [text]}
    dumped.encode("utf-8")
    assert not any(0x7F <= ord(c) <= 0x9F for c in dumped)
    assert not any(c in dumped for c in ALWAYS_SHOWN)


def test_json_escapes_what_sanitize_would_show() -> None:
    assert escape_json('"\x85\x9b\u202e\ud800\u200b"') == '"\\u0085\\u009b\\u202e\\ud800\\u200b"'
    assert escape_json('"\U000e0041"') == '"\\udb40\\udc41"'
    assert escape_json('"👩\u200d💻 é"') == '"👩\u200d💻 é"'


@given(st.text())
def test_visible_escaping_round_trips_exactly(text: str) -> None:
    escaped = escape_visible(text)
    assert unescape_visible(escaped) == text
    escaped.encode("utf-8")
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)", escaped)
    assert not any(c in escaped for c in ALWAYS_SHOWN)


@given(st.text(alphabet="<U+0123456789ABCDEF>\x1b\u202e\r\nx", max_size=40))
def test_visible_escaping_round_trips_text_that_looks_escaped(text: str) -> None:
    assert unescape_visible(escape_visible(text)) == text


def test_visible_escaping_writes_what_sanitize_would_change_as_code_points() -> None:
    assert escape_visible("\x1b]52;c;ZXZpbA==\x07x") == "<U+001B>]52;c;ZXZpbA==<U+0007>x"
    assert escape_visible("a\x85\x9b\x7f\x00b") == "a<U+0085><U+009B><U+007F><U+0000>b"
    assert escape_visible("\u202eevil\ud800 \u200b\U000e0041") == "<U+202E>evil<U+D800> <U+200B><U+E0041>"
    assert escape_visible("crlf\r\nlone\r") == "crlf\r\nlone<U+000D>"  # a CRLF moves no cursor back
    assert escape_visible("tab\tnewline\n👩\u200d💻 é 界") == "tab\tnewline\n👩\u200d💻 é 界"
    assert escape_visible("<U+001B> as text") == "<U+003C>U+001B> as text"


def test_stream_sanitising_lets_only_colour_sequences_through() -> None:
    raw = "\x1b[1;31mred\x1b[0m \x1b[38;5;208mx\x1b[m \x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[?25l\x9b31m\u202e\ud800"
    assert sanitize_stream(raw) == "\x1b[1;31mred\x1b[0m \x1b[38;5;208mx\x1b[m <U+202E><U+D800>"


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
