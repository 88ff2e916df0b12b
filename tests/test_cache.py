"""The caches drop what was used longest ago, not what was added first."""

from __future__ import annotations

from agentdbg.cache import LRUCache
from agentdbg.documents import run_plan_to_end
from agentdbg.plans import load_plan
from agentdbg.tui.widgets import timeline


def test_lru_cache_keeps_what_was_used_recently():
    cache: LRUCache[str, int] = LRUCache(2)
    cache.set("a", 1)
    cache.set("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.set("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache["c"] == 3
    cache.set("a", 10)  # replacing a value keeps one entry
    assert len(cache) == 2 and cache.get("a") == 10
    cache.discard("a")
    assert cache.get("a", "gone") == "gone" and list(cache.keys()) == ["c"]


class _Counting:
    """A run that counts how often each step is read."""

    def __init__(self, run):
        self.run, self.reads = run, []
        self.step_count = run.step_count

    def record(self, step):
        self.reads.append(step)
        return self.run.record(step)


def test_timeline_rows_evict_least_recently_used(monkeypatch):
    run = run_plan_to_end(load_plan("sample_plans/library_good.toml")).runs[0]
    assert run.step_count >= 3
    monkeypatch.setattr(timeline, "ROW_CACHE_SIZE", 2)
    pane = timeline.Timeline()
    counting = _Counting(run)
    pane.run = counting
    pane.row(1)
    pane.row(2)
    pane.row(1)  # used again: step 2 is now the one used longest ago
    pane.row(3)
    counting.reads.clear()
    pane.row(1)
    assert counting.reads == []  # still cached
    pane.row(2)
    assert counting.reads == [2]  # dropped, read again


async def test_timeline_painted_rows_evict_least_recently_painted(monkeypatch):
    from test_tui_support import SIZE, demo_app, settle

    monkeypatch.setattr(timeline, "ROW_CACHE_SIZE", 3)
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c", "c")  # run to the end: five steps to paint
        await settle(pilot)
        pane = app.query_one(timeline.Timeline)
        pane.scroll_to(y=0, animate=False, immediate=True, force=True)
        pane.set_cursor(5)
        pane.scroll_to(y=0, animate=False, immediate=True, force=True)
        painted: list[int] = []
        real = pane._render_row
        monkeypatch.setattr(pane, "_render_row", lambda step, width: painted.append(step) or real(step, width))
        pane._strips.clear()
        for y in (0, 1, 2, 0, 3):  # row 1 is painted again before row 4 comes
            pane.render_line(y)
        painted.clear()
        pane.render_line(0)
        assert painted == []  # row 1 was used recently: still painted
        pane.render_line(1)
        assert painted == [2]  # row 2 was the one used longest ago
