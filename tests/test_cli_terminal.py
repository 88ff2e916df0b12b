"""The headless output boundary, on its own: a console sanitises every text it prints (its
styles kept), its stream lets only colour sequences through; and, before it, every line the
commands format from a hostile run is already clean."""

from __future__ import annotations

import argparse
import io
import re
import sys

from hostile_inputs import NEVER_ON_A_TERMINAL, write_input
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Span, Text

from agentdbg.cli import check, render, stats
from agentdbg.cli.terminal import TerminalStream, make_console, safe_std_streams, sanitize_text
from agentdbg.documents import open_document
from agentdbg.text import sanitize

COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def test_sanitized_text_keeps_its_styles_on_the_characters_they_styled() -> None:
    text = Text("ab\x1b]2;t\x1b\\cd\u202eef", spans=[Span(0, 1, "bold"), Span(1, 11, "red"), Span(11, 14, "green")])
    clean = sanitize_text(text)
    assert clean.plain == "abcd<U+202E>ef"
    styled = {(clean.plain[s.start:s.end], str(s.style)) for s in clean.spans}
    assert styled == {("a", "bold"), ("bcd", "red"), ("<U+202E>ef", "green")}


@given(st.text(alphabet=st.characters(blacklist_characters="\x07\x08\x0b\x0c\r")),  # (rich drops these itself)
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6))
def test_sanitized_text_is_sanitize_of_its_text_with_spans_inside_it(plain: str, ranges) -> None:
    spans = [Span(min(a, b), max(a, b), "bold") for a, b in ranges if a != b and max(a, b) <= len(plain)]
    clean = sanitize_text(Text(plain, spans=spans))
    assert clean.plain == sanitize(plain)
    assert all(0 <= span.start < span.end <= len(clean.plain) for span in clean.spans)


def test_text_with_nothing_to_change_is_the_same_object() -> None:
    text = Text("safe, 漢字 👩\u200d💻")
    assert sanitize_text(text) is text


def terminal_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = make_console(out)
    console._force_terminal = True  # as on a terminal: rich writes its colours
    console._color_system = console._detect_color_system()
    return console, out


def test_a_console_sanitises_whatever_it_prints_even_colour_sequences_in_the_text() -> None:
    console, out = terminal_console()
    # (rich drops a BEL before the console sees the text: an OSC ended by one would then run
    # to the end of the text, so this one ends with ESC \)
    hidden = "\x1b[8mconcealed\x1b[0m \x1b[38;2;0;0;0mblack\x1b]52;c;eA==\x1b\\ \u202eevil \ud800"
    console.print(hidden)
    console.print(Text(hidden, style="bold"))
    console.print(Text.assemble(("label ", "red"), hidden))
    written = out.getvalue()
    assert COLOUR.search(written), "rich's own colours pass"
    assert "\x1b[8m" not in written and "\x1b[38;2;0;0;0m" not in written  # the text's own do not
    assert NEVER_ON_A_TERMINAL.search(COLOUR.sub("", written)) is None
    assert written.count("<U+202E>evil <U+D800>") == 3


def test_the_stream_lets_only_colour_sequences_through() -> None:
    out = io.StringIO()
    stream = TerminalStream(out)
    raw = "\x1b[1;31mok\x1b[0m\x1b[2J\x1b]8;;x\x07l\x1b]8;;\x07\x9b1A\r\x08\u2066\udc80"
    assert stream.write(raw) == len(raw)  # what it was given counts as written
    assert out.getvalue() == "\x1b[1;31mok\x1b[0ml<U+2066><U+DC80>"


def test_the_stream_writes_what_its_encoding_cannot_as_question_marks() -> None:
    raw = io.BytesIO()
    latin = io.TextIOWrapper(raw, encoding="latin-1", write_through=True)
    TerminalStream(latin).write("caffè ⏎ 漢字\n")
    assert raw.getvalue() == "caffè ? ??\n".encode("latin-1")


def test_standard_streams_are_guarded_for_a_command_and_restored_after() -> None:
    before = sys.stdout, sys.stderr
    with safe_std_streams():
        assert isinstance(sys.stdout, TerminalStream) and isinstance(sys.stderr, TerminalStream)
        with safe_std_streams():  # never wrapped twice
            assert not isinstance(sys.stdout.stream, TerminalStream)
    assert (sys.stdout, sys.stderr) == before


def test_every_line_formatted_from_a_hostile_run_is_clean_before_the_boundary(tmp_path) -> None:
    for kind in ("trace", "plan", "swe-agent", "otel-genai"):
        document = open_document(write_input(kind, tmp_path))
        render.wait_for_index(document)
        texts: list[str] = []
        for number, run in render.iter_runs(document):
            texts.append(render.run_header(run, number, 2, document.path, 80).plain)
            for record in render.iter_records(run):
                texts.append(render.step_block(record, 80).plain)
                texts.append(render.state_block(run.state_at(record.step), run.info, 80).plain)
            texts.append(render.outcome_text(run, 80).plain)
            texts.append(render.run_title(run, number))
            entry = stats.run_stats(number, run)
            texts += [value.plain if isinstance(value, Text) else value for _, _, value in stats._rows(entry)]
            texts.append(stats._totals(stats.totals([entry, entry])).plain)
        arguments = argparse.Namespace(run=None, max_report=10, max_runs=0)
        result = check._check(document, list(check.CONDITIONS), arguments)
        texts += [failure["message"] for entry in result["runs"] for failure in entry["failures"]]
        document.close()
        assert len(texts) > 10
        for text in texts:
            assert "\x1b" not in text and NEVER_ON_A_TERMINAL.search(text) is None, (kind, text)
            text.encode("utf-8")  # no lone surrogate
