"""Search over a long trace file in the debugger: the match is shown before every match
is counted, the count follows, and the proofs a search needs are made while it is typed."""

from __future__ import annotations

import threading

import pytest
from test_tui_support import SIZE, press, search_for, settle, status, wait_for

from agentdbg.documents import open_document
from agentdbg.trace import scan
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace
from agentdbg.tui import app as app_module
from agentdbg.tui.app import DebuggerApp

STEPS = 3_000


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("long") / "run.jsonl"
    write_trace(path, [synthetic_run(STEPS)])
    return path


def opened(path) -> DebuggerApp:
    document = open_document(path)
    document.wait()
    return DebuggerApp(document, save_breakpoints=False)


async def test_the_match_is_shown_before_the_count_and_the_count_follows(long_trace, monkeypatch):
    counting = threading.Event()
    may_count = threading.Event()
    real = app_module.matching_steps

    def slow_count(*args, **kwargs):
        counting.set()
        may_count.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(app_module, "matching_steps", slow_count)
    app = opened(long_trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_for(pilot, "Ask calc", settled=False)
        await wait_for(pilot, counting.is_set, "the count began")
        await wait_for(pilot, lambda: not app.busy, "the search ended")
        found = app.session.cursor
        assert found > 1 and "counting the matches" in status(app)
        await pilot.press("n")  # a step while the count runs: the app is not busy with it
        await wait_for(pilot, lambda: app.session.cursor == found + 1, "a step during the count")
        may_count.set()
        await settle(pilot)
        assert app._matches is not None and found in app._matches.steps
        assert "counting" not in status(app)  # (another message since: the count does not overwrite it)
        await press(pilot, "b", "full_stop")
        steps = app._matches.steps
        assert app.session.cursor == steps[steps.index(found) + 1]
        assert f"match {steps.index(found) + 2:,} of {len(steps):,}" in status(app)


async def test_the_count_adds_to_what_the_search_said(long_trace):
    app = opened(long_trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_for(pilot, "Ask calc")
        steps = app._matches.steps
        assert app.session.cursor == steps[0]
        assert f"match for 'Ask calc' at step {steps[0]:,}: match 1 of {len(steps):,}" in status(app)


async def test_a_new_search_stops_the_last_count(long_trace, monkeypatch):
    counted: list[str] = []
    started = threading.Event()
    real = app_module.matching_steps

    def watched(run, query, cancel, **kwargs):
        started.set()
        for _ in range(3000):  # (a count long enough to be stopped)
            if cancel.is_set():
                break
            threading.Event().wait(0.01)
        result = real(run, query, cancel, **kwargs)
        counted.append(f"{query.text}: {'stopped' if result is None else len(result)}")
        return result

    monkeypatch.setattr(app_module, "matching_steps", watched)
    app = opened(long_trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_for(pilot, "Ask", settled=False)
        await wait_for(pilot, started.is_set, "the first count began")
        await search_for(pilot, "zzz-not-there", settled=False)  # (settling would wait for the count)
        await wait_for(pilot, lambda: "no match for 'zzz-not-there'" in status(app), "the second search")
        await settle(pilot)
        assert counted == ["Ask: stopped"] and app._matches is None


async def test_the_steps_are_proven_while_the_search_is_typed(long_trace, monkeypatch):
    monkeypatch.setattr(app_module, "PROVE_AHEAD_STEPS", 100)
    proved: list[int] = []
    real = scan.Block._not_shown_verbatim
    monkeypatch.setattr(scan.Block, "_not_shown_verbatim",
                        lambda block, end: proved.append(block.first) or real(block, end))
    app = opened(long_trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")  # the dialog opens; the proofs are made meanwhile
        assert proved and min(proved) == 1
        proved.clear()
        app.screen.query_one("Input").insert_text_at_cursor("[0-9]{9}")
        await press(pilot, "enter")
        assert "no match for '[0-9]{9}'" in status(app)
        assert proved == []  # the search took them


async def test_a_short_run_is_not_proven_ahead(long_trace, monkeypatch):
    proved: list[int] = []
    real = scan.Block._not_shown_verbatim
    monkeypatch.setattr(scan.Block, "_not_shown_verbatim",
                        lambda block, end: proved.append(block.first) or real(block, end))
    app = opened(long_trace)  # (fewer steps than PROVE_AHEAD_STEPS)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert proved == []
        await press(pilot, "escape")


async def test_a_count_that_fails_leaves_the_match_shown(long_trace, monkeypatch):
    def failing(*args, **kwargs):
        raise OSError("the file went away")

    monkeypatch.setattr(app_module, "matching_steps", failing)
    app = opened(long_trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_for(pilot, "Ask calc")
        assert app.session.cursor > 1 and app._matches is None
        assert "the matches could not be counted" in status(app) and "counting" not in status(app)


async def test_the_status_line_shows_the_regex_as_typed(long_trace):
    app = opened(long_trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for typed, shown in (("\\d{4}-zz\\.q", "'\\d{4}-zz\\.q'"), ("it's \\w+zz", "\"it's \\w+zz\""),
                             ("\x1b[31mred\\zz", "'red\\zz'")):  # (a control sequence is never shown)
            await search_for(pilot, typed)
            assert status(app).startswith(f"no match for {shown}"), status(app)


async def test_the_position_said_while_the_file_is_read_is_counted_again(tmp_path, monkeypatch):
    from test_tui_support import deferred_index

    from agentdbg.trace.reader import open_trace

    deferred_index(monkeypatch)  # the first 4 KiB on opening, the rest once waited for
    path = tmp_path / "run.jsonl"
    write_trace(path, [synthetic_run(400)])
    app = DebuggerApp(open_trace(path), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        assert status(app).startswith("step 2 of ") and "so far" in status(app)
        app.document.wait()
        await wait_for(pilot, lambda: status(app).startswith("step 2 of 400"), "the whole count")
        assert "so far" not in status(app)
        await search_for(pilot, "zzz-nowhere")
        assert status(app).startswith("no match")  # (another message: left alone)


async def test_going_to_another_run_stops_the_count(tmp_path, monkeypatch):
    stopped = threading.Event()
    started = threading.Event()
    real = app_module.matching_steps

    def watched(run, query, cancel, **kwargs):
        started.set()
        for _ in range(3000):
            if cancel.is_set():
                stopped.set()
                break
            threading.Event().wait(0.01)
        return real(run, query, cancel, **kwargs)

    monkeypatch.setattr(app_module, "matching_steps", watched)
    path = tmp_path / "two.jsonl"
    write_trace(path, [synthetic_run(300, seed=1), synthetic_run(300, seed=2)])
    app = opened(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_for(pilot, "Ask calc", settled=False)
        await wait_for(pilot, started.is_set, "the count began")
        await pilot.press("right_square_bracket")  # the next failing run
        await wait_for(pilot, lambda: app.run_index == 1, "the second run shown")
        await wait_for(pilot, stopped.is_set, "the count stopped")
        await settle(pilot)
        assert app._matches is None and "counting" not in status(app)
