"""Regexes without a required word are still looked for in a trace file's raw bytes
before any step is decoded (``agentdbg.debugger.prefilter``, ``quick.regex_block_test``):
by the words one of which every match holds (a literal set), else by a relaxed byte
regex. Neither may ever leave out a step that matches: hypothesis writes random steps
with the trace writer and random regexes, and checks every step whose transcript (or
field) matches is among the steps the byte tests keep."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from test_scan_equivalence import watch_decoding

from agentdbg import regex
from agentdbg.debugger import filters, prefilter, quick
from agentdbg.debugger.find import Query, matching_steps, search_pattern
from agentdbg.debugger.session import DebugSession
from agentdbg.debugger.view import scan_view
from agentdbg.engine import events as ev
from agentdbg.trace import scan
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import write_trace

HANG = 30


# --- literal sets ------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, fold, words", [
    ("a|b", False, {"a", "b"}),
    ("qx|zq", True, {"qx", "zq"}),
    ("colou?r|hue", False, {"color", "colour", "hue"}),
    ("[Ee]rror", False, {"Error", "error"}),
    ("[Ee]rror", True, {"error"}),
    ("[XQ]{3}", False, {"XXX", "XXQ", "XQX", "XQQ", "QXX", "QXQ", "QQX", "QQQ"}),
    ("(?i)fail(ed|ure)|crash", True, {"failed", "failure", "crash"}),
    ("not.there", False, {"there"}),  # the longer of the two words
    ("(?:abc)+x?yz", False, {"abc"}),
    ("^zzz$", False, {"zzz"}),
    ("x{0,3}", False, None),  # may match nothing
    ("[0-9]+", False, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}),
    ("a.*|b.*|c.*|.", False, None),  # a branch without a word: no set
    ("[a-z]{20}", False, None),  # a class too large to spell out
    ("[ab]{20}", False, {a + b + c + d + e + f for a in "ab" for b in "ab" for c in "ab" for d in "ab" for e in "ab" for f in "ab"}),  # spelled out up to 64 words
])
def test_literal_sets(pattern: str, fold: bool, words: set[str] | None) -> None:
    found = prefilter.literal_set(pattern, fold)
    assert (set(found) if found is not None else None) == words


def test_a_literal_set_is_kept_small() -> None:
    found = prefilter.literal_set("[a-h][a-h][a-h]x", False)
    assert found is not None and len(found) <= prefilter.MAX_WORDS


@pytest.mark.parametrize("pattern", ["[[:alpha:]]+", "x{,3}", "\\pL", "\\Qa.b\\E"])
def test_a_pattern_python_reads_otherwise_gets_nothing(pattern: str) -> None:
    assert prefilter.literal_set(pattern, False) is None
    assert prefilter.relaxed(pattern, False) is None


# --- the relaxed byte regex ----------------------------------------------------------------

@pytest.mark.parametrize("pattern, relaxed", [
    ("[0-9]{9}", b"[0-9]{9}"),
    ("\\d{4}-\\d{2}", b"[0-9]{4}\\x2d[0-9]{2}"),
    ("^a|b$", b"(?:a|b)"),  # anchors dropped
    ("\\bx\\B", b"x"),
    ("a\\nb", b"a"),  # what a match holds before its newline
    ("\\s+foo", b"(?:[\\x09\\x0b-\\x0d\\x20]+foo|[\\x09\\x0b-\\x0d\\x20]*foo)"),  # ... or after it
])
def test_relaxed_regexes(pattern: str, relaxed: bytes) -> None:
    found = prefilter.relaxed(pattern, False)
    assert found is not None and found.pattern == relaxed


@pytest.mark.parametrize("pattern, suffix", [
    ("\\d{4}-\\d{2}", b"\\x2d[0-9]{2}"),  # from the first character every match holds
    ("\\w+@\\w+\\.com", b"\\x40[0-9A-Z_a-z]+\\x2ecom"),
    ("[ab]\\s:c", b"\\x3ac"),
    ("(?i)[ab]-z", b"\\x2dz"),
    ("(?i)[ab]z", None),  # a letter under case folding: RE2 does not skip to it
    ("\\d-\\s*b", None),  # the rest may run through a newline
    ("-\\d", None),  # (the relaxed regex begins with it already)
    ("(\\d-\\d)", None), ("[0-9]{9}", None),
])
def test_literal_suffixes(pattern: str, suffix: bytes | None) -> None:
    found = prefilter.literal_suffix(pattern, False)
    assert (found.pattern if found is not None else None) == suffix


@pytest.mark.parametrize("pattern", [
    "a?", "x*", "^$",  # match the empty string: every step
    "[^x]{3}", "\\W", "\\n",  # a match may be nothing but newlines and what is next to them
    "é", "(?=a)", "a(?<!b)", "(a)\\1",  # cannot be translated
])
def test_patterns_that_give_no_relaxed_regex(pattern: str) -> None:
    assert prefilter.relaxed(pattern, False) is None


@pytest.mark.parametrize("pattern", ["\\s" * 3000, "(?:a|\\s)" * 1000, "(" * 90 + "a" + ")" * 90, "[ab]" * 2000,
                                     "." * 5000, "a" * 9000], ids=lambda pattern: f"{pattern[:8]}...")
def test_a_hostile_pattern_stays_cheap(pattern: str, monkeypatch) -> None:
    # Each piece of a relaxed regex is given up on once it grows too large: the text
    # built stays linear in the pattern, never quadratic.
    built: list[int] = []
    real = prefilter._bounded
    monkeypatch.setattr(prefilter, "_bounded", lambda text: built.append(len(real(text))) or text)
    found = prefilter.relaxed(pattern, False)
    assert found is None or len(found.pattern) <= prefilter.MAX_RELAXED
    assert max(built, default=0) <= prefilter.MAX_RELAXED  # each piece bounded...
    assert len(built) <= 10 * len(pattern)  # ... and built a few times per character at most
    words = prefilter.literal_set(pattern, True)
    assert words is None or len(words) <= prefilter.MAX_WORDS


def test_case_folding_is_seen_in_a_group() -> None:
    found = prefilter.relaxed("a(?i:B)c", False)
    assert found is not None and found.fold
    assert not prefilter.relaxed("aBc", False).fold


def test_dotall_dot_may_cross_texts() -> None:
    assert prefilter.relaxed("a.b", False).pattern.count(b"|") == 0
    assert prefilter.relaxed("(?s)a.b", False).pattern.endswith(b"|a)")  # a at a text's end


# --- which test a regex gets -----------------------------------------------------------------

def test_a_regex_without_a_word_gets_a_block_test() -> None:
    for pattern in ["a|b", "[0-9]{9}", "\\d{4}-\\d{2}", "colou?r|hue", "[XQ]{3}", "(?i)fail(ed|ure)|crash", "x.y"]:
        assert quick.regex_block_test(pattern, False) is not None, pattern
        assert quick.regex_bytes_test(pattern, False) is not None, pattern
    for pattern in [".*", "[^x]+", "\\W"]:
        assert quick.regex_block_test(pattern, False) is None, pattern


def test_a_regex_every_step_line_matches_gets_no_test() -> None:
    # Every step would be kept: decoding them straight away is cheaper.
    for pattern in ['"', "[0-9]", "type|zq", "p\"", ".+", "\\w"]:
        assert quick.regex_block_test(pattern, False) is None, pattern
    assert quick.regex_block_test("[0-9]{2}", False) is not None  # (a step's number may have one digit)


def test_without_re2_only_literal_sets_are_used(monkeypatch) -> None:
    monkeypatch.setattr(quick, "_re2", None)
    quick._prefilter.cache_clear()
    try:
        assert quick.regex_block_test("\\d{4}-\\d{2}", True) is None  # a relaxed regex needs RE2
        assert quick.regex_block_test("qx|zq", True) is not None
    finally:
        quick._prefilter.cache_clear()


# --- soundness, with hypothesis ------------------------------------------------------------------

_PLAIN = list("aaabbbz_0 .:-")  # written as they are
_CHARS = _PLAIN + list('"\\\n\té\u212a')  # and some that are not
_PLAIN_TEXT = st.text(alphabet=st.sampled_from(_PLAIN), max_size=4)
_TEXT = st.one_of(_PLAIN_TEXT, st.text(alphabet=st.sampled_from(_CHARS), max_size=6),
                  st.sampled_from(['{"type":"thought","step":1,"text":"zq"}', "\\u0061b", "a\nb", "qx zq", "AbZ",
                                   "\u212a", "1e5", "unknown", "should", "True", "None", "0123456789", "a\x7fb",
                                   'a"b', "a\\b", "a\tb", "b\na", "a:b-", "a\\nb"]))


def _events(text: st.SearchStrategy[str], tools: st.SearchStrategy[str]) -> st.SearchStrategy[ev.Event]:
    """Events of a step, those shown as written more often than the others."""
    verbatim = st.one_of(
        st.builds(ev.Thought, step=st.just(0), text=text),
        st.builds(ev.ActionTaken, step=st.just(0), tool=tools, args=text, call=text.filter(bool)),
        st.builds(ev.ActionTaken, step=st.just(0), tool=tools, args=text, call=text.filter(bool),
                  id=st.sampled_from(["c1", "c2"])),
        st.builds(ev.Observation, step=st.just(0), text=text, error=st.booleans()),
        st.builds(ev.Observation, step=st.just(0), text=text, id=st.sampled_from(["c1", "c2"])),
        st.builds(ev.StepError, step=st.just(0), kind=st.sampled_from(ev.ERROR_KINDS), message=text, tool=text),
        st.builds(ev.ParseFailed, step=st.just(0), message=text, text=text),
        st.builds(ev.Answered, step=st.just(0), answer=text),
        st.builds(ev.GuardTripped, step=st.just(0), guard=st.sampled_from(ev.GUARD_NAMES), message=text),
        st.builds(ev.GuardCounters, step=st.just(0), repeats=st.integers(0, 3).map(lambda n: [n, None])),
        st.builds(ev.MemoryRecall, step=st.just(0), query=text),
        st.builds(ev.MemoryUpdate, step=st.just(0), added=st.lists(text, max_size=2), summary=st.none() | text),
    )
    made_up = st.one_of(  # a call shown from its tool and arguments, an approval, a plan, a raw record
        st.builds(ev.ActionTaken, step=st.just(0), tool=tools, args=text | st.dictionaries(text, text | st.integers(),
                                                                                           max_size=2)),
        st.builds(ev.Approval, step=st.just(0), tool=st.just("calc"), decision=st.sampled_from(ev.DECISIONS),
                  reason=text),
        st.builds(ev.PlanMade, step=st.just(0), items=st.lists(text, max_size=2), revision=st.integers(1, 2)),
        st.builds(ev.RawRecord, step=st.just(0), source=text, note=text),
    )
    return st.one_of(verbatim, verbatim, verbatim, verbatim, verbatim, made_up)


# ASCII texts JSON escapes: quotes, backslashes, tabs, newlines.
_ESCAPED_TEXT = st.one_of(_PLAIN_TEXT, st.sampled_from(['a"b', "a\\b", "a\tb", "b\na", 'a\\"', '"a"', "a\\nb", "ab\n",
                                                        "\\u0061b", "a\r\nb", "a/b", "a\nb", "\nb"]))
# Short texts, so that matches often run from one text to the next.
_SHORT_TEXT = st.sampled_from(["a", "b", "ab", " a", "b ", "a\nb", "b\na", "a\n", "\nb", ""])
# A step is plain (its texts written as they are), short, escaped, or anything.
_STEP_EVENTS = st.one_of(st.lists(_events(_PLAIN_TEXT, st.sampled_from(["calc", "a b"])), max_size=5),
                         st.lists(_events(_SHORT_TEXT, st.sampled_from(["a", "b"])), max_size=4),
                         st.lists(_events(_ESCAPED_TEXT, st.sampled_from(["calc", 'q"x'])), max_size=4),
                         st.lists(_events(_TEXT, st.sampled_from(["calc", "zq", "a b", 'q"x'])), max_size=5))
# Lines put at the end of a step as they are: damage, and valid lines of unusual spelling.
_LINES = st.sampled_from([
    *[b""] * 12, b"not json\n", b'{"type":"thought","step":%d,"text":5}\n', b'{"type":"mystery","step":%d}\n',
    b'{"type":"observation","step":%d,"text":"x","error":true,"error":false}\n',
    b'{"type":"thought","step":%d,"text":"\\u0071x spelled with escapes"}\n',
    b'{"type": "thought", "step": %d, "text": "spaced zq"}\n',
    b'{"type":"guards","step":%d,"repeats":[1e5,null]}\n',
    b'{"type":"thought","step":%d,"text":"crlf zq"}\r\n',
    b'{"type":"observation","step":%d,"text":"\xe9 not UTF-8 \xff"}\n',
    b'{"type":"action","step":%d,"tool":"calc","args":"1","call":""}\n',
])

# Regexes from a small grammar: literals (punctuation and quotes too), classes, negated
# classes, ., \s \d \w and their negations, alternation, repeats, anchors, (?i).
_ATOM = st.sampled_from([
    "a", "a", "b", "b", "z", "A", "0", "_", " ", ":", "-", '"', "'", "\\.", "\\\\", "\\[", "\\n", "\\t", "é",
    "[ab]", "[^a]", "[a-c\"]", '[^"\\\\]', "[0-9]", "[Zz]", ".", "\\s", "\\d", "\\w", "\\S", "\\W", "\\D"])
_ANCHOR = st.sampled_from(["^", "$", "\\b", "\\B", "\\A", "\\z"])
_REPEAT = st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{0,2}"])


def _regexes() -> st.SearchStrategy[str]:
    piece = st.recursive(
        _ATOM | _ANCHOR,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.lists(inner, min_size=2, max_size=3).map("|".join),
            st.tuples(inner, _REPEAT).map(lambda pair: f"(?:{pair[0]}){pair[1]}"),
            inner.map(lambda text: f"({text})"),
            inner.map(lambda text: f"(?i:{text})"),
        ),
        max_leaves=6)
    return st.tuples(st.sampled_from(["", "", "(?i)", "(?s)"]), piece).map("".join)


_STEPS = st.lists(st.tuples(_STEP_EVENTS, _LINES), min_size=1, max_size=12)
_SETTINGS = settings(max_examples=600, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _trace(path: Path, steps, every: int = 10**9) -> Path:
    events: list[ev.Event] = [ev.RunStart(step=0, task="t", name="r")]
    for number, (step_events, _) in enumerate(steps, 1):
        events.append(ev.StepStart(step=number))
        events += [type(e)(**{**e.__dict__, "step": number}) for e in step_events]
    write_trace(path, [events], checkpoint_every=every)
    data = path.read_bytes()
    for number, (_, extra) in reversed(list(enumerate(steps, 1))):
        if extra and number < len(steps):
            at = data.rfind(b'{"type":"step","step":%d}' % (number + 1))
            data = data[:at] + (extra % number if b"%d" in extra else extra) + data[at:]
    path.write_bytes(data)
    return path


def _note(text: str) -> None:
    """Count ``text`` in hypothesis's statistics (outside a hypothesis test: nothing)."""
    try:
        event(text)
    except InvalidArgument:
        pass


def _kept(run, test) -> set[int]:
    kept: set[int] = set()
    for block in run.step_blocks(1, run.step_count):
        if block.first % 2:
            scan.classify(block)  # as a forward scan's worker processes leave it
        kept |= test(block)
    return kept


def _missed(path: Path, pattern_text: str) -> list[tuple[str, int]]:
    """(what, step) for each step that matches but that a byte test leaves out."""
    try:
        searched = regex.compile_smart(pattern_text)
    except regex.RegexError:
        return []
    missed = []
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        records = {step: run.record(step) for step in range(1, run.step_count + 1)}
        case_sensitive = not searched.flags & regex.re.IGNORECASE
        block_test = quick.regex_block_test(pattern_text, case_sensitive)
        step_test = quick.regex_bytes_test(pattern_text, case_sensitive)
        kept = _kept(run, block_test) if block_test is not None else set(records)
        for step, record in records.items():
            if searched.found(filters.transcript_text(record)):
                _note("a step matches" + (", its bytes tested" if block_test is not None else ""))
                if step not in kept:
                    missed.append(("search", step))
                data = run.step_bytes(step)
                if step_test is not None and data is not None and not step_test(data):
                    missed.append(("search, one step", step))
        # The session's searches, one after the other (each takes what the others proved).
        matching = [step for step, record in records.items() if searched.found(filters.transcript_text(record))]
        session = DebugSession(run)
        for origin in (len(records), 0, 2, 5):
            expected = next((step for step in matching if step > origin), matching[0] if matching else None)
            if session.search(pattern_text, from_step=origin) != expected:
                missed.append(("session search from", origin))
        for cls in (filters.FText, filters.FObs, filters.FThought, filters.FAction, filters.FArgs, filters.FAnswer):
            flt = cls(pattern_text)
            test = flt.block_test()
            bytes_test = flt.bytes_test()
            kept = _kept(run, test) if test is not None else set(records)
            for step, record in records.items():
                if flt.matches(record):
                    if step not in kept:
                        missed.append((cls.code, step))
                    data = run.step_bytes(step)
                    if bytes_test is not None and data is not None and not bytes_test(step, data):
                        missed.append((cls.code + ", one step", step))
    return missed


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(scan, "BLOCK_BYTES", 1500)  # several blocks, steps cut across their edges


@_SETTINGS
@given(steps=_STEPS, pattern=_regexes(), every=st.sampled_from([4, 10**9]), decode_few=st.sampled_from([0, 128]))
def test_no_step_that_matches_is_left_out(tmp_path: Path, monkeypatch, steps, pattern: str, every: int,
                                          decode_few: int) -> None:
    # (decode_few 0: every step holding a word is confirmed by the relaxed regex)
    monkeypatch.setattr(quick, "DECODE_FEW", decode_few)
    path = _trace(tmp_path / "run.jsonl", steps, every)
    assert _missed(path, pattern) == []


NAMED = [
    "a|b", "qx|zq", "[0-9]{2}", "\\d-\\d", "colou?r|hue", "[XQ]{3}", "(?i)x(z|q)|zq", "x.y", "a\\s*b", "\\bzq\\b",
    "z\\nq", "a\\nb", "^a", "^[ab]", "b$", "\\bb.", '"', 'a"', '"b', "a\\\\", "\\\\b", "\\tb", "a\\sb", "a.b", "[^a]b", "\\Wb",
    "(?s)a.b", "a\\S", "[zZ]a", "\\d|_", "(?i)k", "K", "c\\[", "\\[a", "b\\]", "\\W\\w", "zq\\s*xq", "(?i)xq.zq",
    "zq\\nxq", "^zq", "xq$", "c\\[zq\\]", "calc\\[", "calc\\[a", "ab\\]", "'ab'", "b'", "calc[(]",
    "\\d{2}-\\d", "\\d-\\s*b", "[ab]:b", "(?i)[ab]-z", "\\s:", "[ab]\\.\\s", "\\d\\.\\d", "a.b-"]


@pytest.mark.parametrize("pattern", NAMED)
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=_STEPS)
def test_no_step_that_matches_is_left_out_named_regexes(tmp_path: Path, monkeypatch, steps, pattern: str) -> None:
    monkeypatch.setattr(quick, "DECODE_FEW", 0)  # (words confirmed by the relaxed regex)
    path = _trace(tmp_path / "run.jsonl", steps)
    assert _missed(path, pattern) == []


_VIEW_FILTERS = st.sampled_from([
    "~text x.y", "~obs [0-9]{2}", "~text a|b", "~thought a\\sb", "~answer ^a", "~action c\\[", "~args a.b",
    "colou?r|hue", "~tool calc", "~tool zq & ~text a.b", "~error | ~obs b$", "~step 2..4 | ~text [ab]{2}",
    "!~obs a", "~final", "~text \\W"])


@_SETTINGS
@given(steps=_STEPS, text=_VIEW_FILTERS, block_bytes=st.sampled_from([200, 1500]))
def test_a_view_filter_keeps_the_steps_decoding_every_step_keeps(tmp_path: Path, monkeypatch, steps, text: str,
                                                                 block_bytes: int) -> None:
    monkeypatch.setattr(scan, "BLOCK_BYTES", block_bytes)  # (200: steps too large for a block, read alone)
    path = _trace(tmp_path / "run.jsonl", steps, 3)
    flt = filters.parse_filter(text)
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        expected = [step for step in range(1, run.step_count + 1) if flt.matches(run.record(step))]
        view = scan_view(run, text, flt)
        assert view is not None and list(view.steps) == expected


def test_a_view_filter_over_blocks_can_be_cancelled(tmp_path: Path) -> None:
    import threading

    steps = [([ev.Observation(step=0, text="id 123456789")], b"")] * 600  # every step decoded
    path = _trace(tmp_path / "run.jsonl", steps)
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        cancel = threading.Event()
        decoded = watch_decoding(run, cancel)
        assert scan_view(run, "~obs [0-9]{9}", filters.parse_filter("~obs [0-9]{9}"), cancel) is None
        assert len(decoded) < 300  # stopped long before the last step


def test_a_relaxation_that_keeps_an_anchor_is_caught(tmp_path: Path, monkeypatch) -> None:
    # The check above can fail: a relaxed regex that kept ^ (the start of the bytes, not
    # of a text) would leave out the step whose observation starts with the match.
    steps = [([ev.Thought(step=0, text="plain"), ev.Observation(step=0, text="qz here")], b"")] * 3
    path = _trace(tmp_path / "run.jsonl", steps)
    assert _missed(path, "^q[a-z]") == []
    real = prefilter._one

    def keeping_anchors(op, value, dotall):
        return prefilter._Piece("^", True) if op is prefilter._c.AT else real(op, value, dotall)

    monkeypatch.setattr(prefilter, "_one", keeping_anchors)
    quick._prefilter.cache_clear()
    try:
        assert _missed(path, "^q[a-z]")
    finally:
        quick._prefilter.cache_clear()


@pytest.mark.parametrize("texts, pattern", [
    (["ends with a", "b begins"], "a\\sb"),  # across the newline that joins two texts
    (["one\na", "b"], "a\\s+b"),  # across a newline written \n inside a text
    (['say "a"'], 'a"'),  # a quote written \"
    (["tab\tb"], "\\tb"),
    (["back\\slash"], "k\\\\s"),
    (["year 2024-", "11 it was"], "\\d{4}-\\s*\\d{2}"),  # after the character every match holds
    (["year 2024-\n11 it was"], "\\d{4}-\\s*\\d{2}"),
])
def test_a_match_through_what_the_bytes_write_otherwise_is_found(tmp_path: Path, texts: list[str],
                                                                 pattern: str) -> None:
    steps = [([ev.Thought(step=0, text="plain")], b"")] * 5
    steps[2] = ([ev.Thought(step=0, text=texts[0])] + [ev.Observation(step=0, text=text) for text in texts[1:]], b"")
    path = _trace(tmp_path / "run.jsonl", steps)
    assert quick.regex_block_test(pattern, False) is not None
    assert _missed(path, pattern) == []
    with open_trace(path) as document:
        document.wait(HANG)
        assert DebugSession(document.runs[0]).search(pattern, from_step=0) == 3


@pytest.mark.parametrize("classified", [False, True])
def test_a_call_shown_from_its_tool_and_arguments_is_looked_at(tmp_path: Path, classified: bool) -> None:
    steps = [([ev.Thought(step=0, text="plain"), ev.ActionTaken(step=0, tool="calc", args="1", call="calc[1]"),
               ev.Observation(step=0, text="2")], b"")] * 5
    steps[2] = ([ev.ActionTaken(step=0, tool="calc", args="2"), ev.Observation(step=0, text="2")], b"")
    path = _trace(tmp_path / "run.jsonl", steps)
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        kept, kept_in_field = set(), set()
        for block in run.step_blocks(1, run.step_count):
            if classified:  # a plain step: the classification leaves it out, the action does not
                scan.classify(block)
                assert 3 not in block.candidates
            kept |= quick.regex_block_test("c\\[2", True)(block)
            kept_in_field |= quick.regex_block_test("c\\[2", True, made_up=False)(block)
        assert 3 in kept and 3 not in kept_in_field


def test_a_search_for_a_regex_without_a_word_decodes_only_what_may_match(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(scan, "BLOCK_BYTES", 4096)  # (a step with a checkpoint line fits in a block)
    steps = [([ev.Thought(step=0, text="plain"), ev.ActionTaken(step=0, tool="calc", args="1", call="calc[1]"),
               ev.Observation(step=0, text="2")], b"")] * 200
    steps[150] = ([ev.Observation(step=0, text="id 123456789")], b"")
    steps[60] = ([ev.Observation(step=0, text='an "escaped" text')], b"")  # escaped: decoded to be sure
    path = _trace(tmp_path / "run.jsonl", steps)
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        decoded = watch_decoding(run)
        assert DebugSession(run).search("[0-9]{9}", from_step=0) == 151
        assert set(decoded) <= {61, 151}
        decoded.clear()
        assert DebugSession(run).search("qx|zq", from_step=0) is None
        assert decoded == []


def test_a_word_most_steps_hold_is_confirmed_by_the_relaxed_regex(tmp_path: Path, monkeypatch) -> None:
    steps = [([ev.ActionTaken(step=0, tool="catalog", args=f"{n}", call=f"catalog[{n}]"),
               ev.Observation(step=0, text="5")], b"") for n in range(400)]
    steps[300] = ([ev.ActionTaken(step=0, tool="catalog", args="17")], b"")  # shown as catalog[17]: made up
    steps[100] = ([ev.Observation(step=0, text='a "catalog[17]" quoted')], b"")  # escaped: decoded to be sure
    path = _trace(tmp_path / "run.jsonl", steps)
    monkeypatch.setattr(quick, "DECODE_FEW", 2)  # (blocks of 1500 bytes: a dozen steps each)
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        decoded = watch_decoding(run)
        assert matching_steps(run, Query.parse("catalog\\[17\\]")) == [18, 101, 301]
        assert set(decoded) <= {18, 101, 301, 400}  # not the 396 others holding "catalog" (400: the run's end)
        monkeypatch.setattr(quick, "DECODE_FEW", 10**6)  # (few steps hold the word: each is decoded)
        quick._prefilter.cache_clear()
        decoded.clear()
        assert matching_steps(run, Query.parse("catalog\\[17\\]")) == [18, 101, 301]
        assert len(decoded) == 400


def test_a_second_search_takes_what_the_first_proved(tmp_path: Path, monkeypatch) -> None:
    steps = [([ev.Thought(step=0, text="plain"), ev.Observation(step=0, text=f"{n}")], b"") for n in range(60)]
    steps[40] = ([ev.Observation(step=0, text="x-y")], b"")
    steps[50] = ([ev.ActionTaken(step=0, tool="calc", args="x-y")], b"")  # shown as calc[x-y]: made up
    path = _trace(tmp_path / "run.jsonl", steps)
    proved: list[int] = []
    real = scan.Block._not_shown_verbatim
    monkeypatch.setattr(scan.Block, "_not_shown_verbatim", lambda block, end: proved.append(block.first) or real(block, end))
    with open_trace(path) as document:
        document.wait(HANG)
        session = DebugSession(document.runs[0])
        assert session.search("q.z", from_step=0) is None  # every step looked at
        assert proved
        proved.clear()
        assert session.search("x.y", from_step=0) == 41  # another regex: the same proofs
        assert session.search("x.y", from_step=41) == 51  # the made-up call, found again
        assert session.search("x.y", from_step=51) == 41  # round the run
        assert session.search("x.y", from_step=20, forward=False) == 51
        assert proved == []  # every block's steps were proved by the first search
        assert DebugSession(document.runs[0]).search("x.y", from_step=41) == 51  # (a new session proves again)
        assert proved


def test_search_pattern_text_gets_the_same_test() -> None:
    pattern = search_pattern("(?i)colou?r|hue")
    assert quick.regex_block_test(pattern.pattern, not pattern.flags & regex.re.IGNORECASE) is not None
