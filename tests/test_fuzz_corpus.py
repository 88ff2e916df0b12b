"""The fuzz/mutation corpus (tests/fuzz): a fast deterministic sample of it runs here,
every command on each case in a child process with a time limit; the full set runs with
``tests/fuzz/run.py`` (docs/hardening.md). The hostile requests for ``agentdbg serve``
(tests/fuzz/serve_cases.py) are sent whole to a real server: they take a second.

The sample's tests pass only when agentdbg has no traceback, hang or escape leak on any
case of the sample; the tests of the harness itself check that it finds each kind of
failure and that the corpus covers every field of every event type."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fuzz import binary_cases, classify, corpus, import_cases, runner, serve_cases

from agentdbg import importers
from agentdbg.engine import events as ev

if sys.platform != "linux":
    pytest.skip("the fuzz harness runs commands with Linux process features (/proc, prctl)",
                allow_module_level=True)

SAMPLE = 40  # quick cases drawn evenly from every category
SEED = 0
TIMEOUT = 3.0  # seconds per command (of CPU, or asleep)
TUI_TIMEOUT = 4.0  # seconds the debugger may take to open the file, then for each key (a key takes ~1 s of CPU)
DEBUGGER_SAMPLE = 1  # sampled cases also opened in the debugger
# Always in the sample: what blocks or runs away rather than fails (in child processes with
# time limits: the debugger on the first and the last), a hostile file name, a formula in
# an exported table, an export that reads nothing, a damaged journal and a trace naming a plan.
PINNED = ("special/fifo/jsonl", "special/fifo/toml", "sidecar/pattern/nested-plus", "special/hostile-name/missing",
          "export/formula/hyperlink", "export/reads-nothing/dev-zero",
          "fork/journal/plain/operation=cut-after-key", "fork/source/beside=hash-absent")
PINNED_IN_DEBUGGER = ("special/fifo/jsonl", "sidecar/pattern/nested-plus")


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    # At the suite's own priority (the full run lowers its workers'): a short run, and its
    # time limits are not eaten by other work on the machine.
    with runner.Pool(tmp_path_factory.mktemp("fuzz-corpus"), timeout=TIMEOUT, tui_timeout=TUI_TIMEOUT,
                     nice=0) as pool:
        yield pool


@pytest.fixture(scope="module")
def cases(pool) -> list:
    return pool.prepare()


@pytest.fixture(scope="module")
def sample_report(pool, cases) -> runner.Report:
    quick = corpus.sample([case for case in cases if not case.slow], SAMPLE, SEED)
    pinned = [case for case in cases if case.id in PINNED]
    selection = pinned + [case for case in quick if case not in pinned]  # the long ones first
    debugger = set(PINNED_IN_DEBUGGER) | {case.id for case in corpus.sample(quick, DEBUGGER_SAMPLE, SEED)}
    return pool.run(selection, tui=debugger)


def failures_in(report: runner.Report, categories: tuple[str, ...], *, debugger: bool | None = None) -> list[str]:
    """The report's failures on cases of ``categories``: in the debugger, in the headless
    commands, or both (None)."""
    chosen = runner.Report(cases=report.cases, tried=report.tried)
    for failure in report.failures:
        in_debugger = failure.finding.command.endswith("(debugger)")
        if failure.category in categories and (debugger is None or debugger == in_debugger):
            chosen.failures.append(failure)
    return runner.failures(chosen, examples=2)


def test_the_sample_ran_every_command_on_every_case(sample_report):
    assert not sample_report.errors, "\n".join(sample_report.errors)
    assert sample_report.done == sample_report.cases
    assert sample_report.tried >= sample_report.cases * 7


def test_mutated_traces_fail_no_command(sample_report):
    found = failures_in(sample_report, ("trace-field", "trace-event"), debugger=False)
    assert not found, "\n".join(found)


def test_mutated_saved_runs_fail_no_command(sample_report):
    found = failures_in(sample_report, ("import-field", "import-text"), debugger=False)
    assert not found, "\n".join(found)


def test_damaged_and_special_files_fail_no_command(sample_report):
    found = failures_in(sample_report, ("damaged", "special", "fixture"), debugger=False)
    assert not found, "\n".join(found)


def test_breakpoint_files_beside_a_trace_fail_nothing(sample_report):
    found = failures_in(sample_report, ("sidecar",))
    assert not found, "\n".join(found)


def test_exports_of_hostile_runs_and_exports_that_read_nothing_fail_nothing(sample_report):
    found = failures_in(sample_report, ("export",), debugger=False)
    assert not found, "\n".join(found)


def test_forks_and_appended_runs_repeat_no_side_effect_and_run_no_code_the_trace_chose(sample_report):
    found = failures_in(sample_report, ("fork",), debugger=False)
    assert not found, "\n".join(found)


def test_the_debugger_opens_or_refuses_each_sampled_case_and_quits_cleanly(sample_report):
    others = tuple(category for category in corpus.CATEGORIES if category != "sidecar")
    found = failures_in(sample_report, others, debugger=True)
    assert not found, "\n".join(found)


@pytest.mark.skipif(importlib.util.find_spec("textual_serve") is None, reason="agentdbg[web] is not installed")
def test_a_served_debugger_refuses_every_hostile_request_and_prints_no_trace(tmp_path):
    found = serve_cases.attack(tmp_path, serve_cases.cases())
    assert not found, "\n".join(finding.detail for _, finding in found)


# -- the corpus ---------------------------------------------------------------------------------


def test_every_field_of_every_event_type_is_mutated_by_type(cases):
    ids = {case.id for case in cases}
    shapes = {case_id.rsplit("=", 1)[0] for case_id in ids if case_id.startswith("trace-field/")}
    for event_type, cls in ev.EVENT_TYPES.items():
        for name in ["step"] + [f.name for f in dataclasses.fields(cls) if f.name != "step"]:
            mutated = [shape for shape in shapes if shape.startswith(f"trace-field/{event_type}.{name}(")]
            assert mutated, f"{event_type}.{name} is never mutated"
            for shape in mutated:
                assert f"{shape}=dropped" in ids
                if shape.endswith("(string)"):
                    for hostile in ("osc", "csi", "dcs", "c1", "nul", "bidi", "zero-width", "surrogate", "markup",
                                    "huge", "null", "int"):
                        assert f"{shape}={hostile}" in ids, f"{shape}={hostile}"
                if shape.endswith("(number)"):
                    for hostile in ("negative", "huge", "float", "nan-string", "bool", "null"):
                        assert f"{shape}={hostile}" in ids, f"{shape}={hostile}"
                if shape.endswith(("(list)", "(dict)")):
                    for hostile in ("empty", "null", "nested-100000"):
                        assert f"{shape}={hostile}" in ids, f"{shape}={hostile}"
        for how in ("duplicated", "dropped", "type-unknown", "replaced-by-null"):
            assert f"trace-event/{event_type}={how}" in ids
    assert any(case_id.startswith("trace-field/header.version(number)=") for case_id in ids)
    assert any(case_id.startswith("trace-field/checkpoint.state.memory.recalled[].score(") for case_id in ids)


@pytest.mark.parametrize("shape", [
    "import-field/swe-agent/info.exit_status(string)",
    "import-field/openai-chat/messages[role=assistant].tool_calls[type=function].function.arguments(string)",
    "import-field/anthropic-messages/messages[role=assistant].content[type=tool_use].input(dict)",
    "import-field/otel-genai/resourceSpans[].scopeSpans[].spans[].attributes[key=gen_ai.tool.name].value.stringValue(string)",
    "import-text/react-paper/action-numbered-call",
    "import-text/react-paper/result",
    "import-text/transcript/action-input",
])
def test_importer_formats_are_mutated_field_by_field(cases, shape):
    assert any(case.id.startswith(f"{shape}=") for case in cases), shape


@pytest.mark.parametrize("shape", [
    "import-field/codex-rollout/payload.arguments(string)",
    "import-field/claude-code/message.content[type=tool_use].input(dict)",
    "import-field/otlp-protobuf/resourceSpans[].scopeSpans[].spans[].name(string)",
    "import-field/inspect-ai/samples:messages[role=assistant].tool_calls[].arguments.code(string)",
    "import-field/otel-sdk/attributes.gen_ai.input.messages(string)",
])
def test_the_newer_formats_are_mutated_field_by_field(cases, shape):
    assert any(case.id.startswith(f"{shape}=") for case in cases), shape


def test_the_protobuf_writer_writes_the_runs_of_the_binary_fixtures():
    """The binary OTLP cases are written from the JSON twins by the corpus's own writer:
    unmutated, they hold what the fixtures written with the official classes hold."""
    from agentdbg.importers import otlp_proto

    twins = binary_cases._twins()
    assert len(twins) >= 5
    for name, documents in twins:
        written = binary_cases._stream([binary_cases.encode(document) for document in documents], len(documents) > 1)
        fixture = (import_cases.FIXTURES / "otlp-protobuf" / name).read_bytes()
        runs = [[event.to_dict() for event in run] for run in otlp_proto.convert(written, name).runs]
        assert runs == [[event.to_dict() for event in run] for run in otlp_proto.convert(fixture, name).runs], name
        assert runs, name


@pytest.mark.parametrize("format_name", sorted(importers.BY_NAME))
def test_every_importer_format_gets_hostile_text_and_damaged_files(cases, format_name):
    """A format added to agentdbg.importers without fixtures to mutate fails here."""
    assert import_cases.fixtures(format_name), f"no fixtures in tests/fixtures/import/{format_name}/"
    ids = [case.id for case in cases]
    mine = [case_id for case_id in ids if case_id.startswith((f"import-field/{format_name}/",
                                                               f"import-text/{format_name}/"))]
    assert any(case_id.endswith("=hostile") for case_id in mine), f"{format_name}: no hostile text"
    assert any(case_id.endswith("=nul") for case_id in mine), f"{format_name}: no NUL"
    assert any(case_id.endswith("=dropped") for case_id in mine), f"{format_name}: nothing dropped"
    damaged = [case_id for case_id in ids if case_id.startswith("damaged/") and f"/{format_name}" in case_id]
    assert any("/import-truncated/" in case_id for case_id in damaged), f"{format_name}: never truncated"
    assert any("/import-encoding/" in case_id or f"/{format_name}/" in case_id.replace("-zip/", "/")
               for case_id in damaged if "/import-truncated/" not in case_id), f"{format_name}: no other damage"
    assert f"fixture/import/{format_name}/" in " ".join(ids)


def test_the_hostile_requests_try_every_way_in():
    ids = [request.id for request in serve_cases.cases()]
    assert len(ids) == len(set(ids))
    for kind in ("host/page=", "host/websocket=", "token/page=", "token/websocket=", "origin/websocket=", "path=",
                 "method=", "http="):
        assert sum(case_id.startswith(f"serve/{kind}") for case_id in ids) >= 2, kind
    for expected in ("host/page=evil-name", "host/websocket=loopback-subdomain", "host/page=twice",
                     "token/page=upper", "token/page=prefix", "token/page=as-cookie", "token/websocket=suffix",
                     "origin/websocket=null", "origin/websocket=missing", "origin/websocket=twice",
                     "path=encoded-parent"):
        assert f"serve/{expected}" in ids, expected


def test_damaged_and_special_files_are_in_the_corpus(cases):
    ids = {case.id for case in cases}
    for expected in ("special/fifo/toml", "special/fifo/jsonl", "special/dev-zero/toml", "special/dev-zero/jsonl",
                     "special/dev-zero/path-format-plan", "special/dangling-link/jsonl", "special/link-loop/self-jsonl",
                     "special/unreadable/trace", "special/directory/jsonl", "special/empty/jsonl",
                     "special/content/header-only", "special/content/random-64k", "damaged/trace-50mb/observation",
                     "damaged/trace-encoding/utf8-bom", "damaged/trace-encoding/crlf", "sidecar/fifo",
                     "sidecar/refused/bad-json", "sidecar/huge-50mb", "sidecar/pattern/nested-plus"):
        assert expected in ids, expected
    assert sum(case_id.startswith("damaged/trace-truncated/") for case_id in ids) > 50
    for expected in ("damaged/otlp-protobuf/varint-11-bytes", "damaged/otlp-protobuf/nested-3000/detected",
                     "damaged/inspect-ai-zip/bomb-2gib", "damaged/inspect-ai-zip/members-100001",
                     "damaged/inspect-ai-zip/cut-before-directory", "damaged/import-50mb/codex-rollout"):
        assert expected in ids, expected


def test_exports_are_in_the_corpus(cases):
    ids = {case.id for case in cases}
    for expected in ("export/formula/hyperlink", "export/formula/minus", "export/formula/crlf", "export/control/hostile",
                     "export/control/surrogate", "export/control-chat/bidi", "export/reads-nothing/missing",
                     "export/reads-nothing/dev-zero", "export/reads-nothing/fifo", "export/reads-nothing/header-only"):
        assert expected in ids, expected
    exporting = [case for case in cases if case.category == "export" and "control-chat" not in case.id]
    assert all(any(command[:2] == ("export", "--table") for command in case.commands) for case in exporting)
    assert all(case.after is not None for case in exporting)


def test_forks_and_appends_are_tried_on_damaged_journals_mismatched_approvals_and_foreign_plans(cases):
    from fuzz import fork_cases

    ids = {case.id for case in cases}
    for tool in ("dangerous", "plain"):
        for damage in fork_cases.DAMAGES:
            for target in ("operation", "observation", "both"):
                assert f"fork/journal/{tool}/{target}={damage}" in ids
        for damage in fork_cases.LOSSY:
            assert f"fork/journal/{tool}/operation={damage}" in ids
    for how in fork_cases.APPROVAL_MUTATIONS:
        assert f"fork/approval/step-1={how}" in ids and f"fork/approval/step-2={how}" in ids
    for where in fork_cases.SOURCES:
        assert f"fork/source/{where}=hash-absent" in ids
    forking = [case for case in cases if case.category == "fork"]
    assert all(case.after is not None and any(command[0] == "fork" for command in case.commands)
               for case in forking)


def test_the_sample_is_deterministic_and_draws_from_every_category(cases):
    first = [case.id for case in corpus.sample(cases, 40, seed=5)]
    assert first == [case.id for case in corpus.sample(cases, 40, seed=5)]
    assert first != [case.id for case in corpus.sample(cases, 40, seed=6)]
    assert {case.category for case in corpus.sample(cases, 40, seed=5)} == set(corpus.CATEGORIES)


def test_each_case_builds_its_input(cases, tmp_path):
    for number, case in enumerate(corpus.sample([case for case in cases if not case.slow], 80, seed=3)):
        directory = tmp_path / str(number)
        directory.mkdir()
        case.make(directory)
        assert any(directory.iterdir()) or case.name.startswith("/") or "missing" in case.id, case.id


# -- the harness ----------------------------------------------------------------------------------

# Run in a fresh interpreter: forking the test process itself (threads of other tests
# may be running) could deadlock the child.
SELF_TEST = textwrap.dedent("""
    import json, os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from fuzz import classify, execute

    def escape():
        print("plain \\t text, accents é, emoji 🙂, dots …")
        print("hidden \\x1b]52;c;eA==\\x07 here")
        return 0

    def bidi():
        print("file\\u202etxt.exe")
        return 0

    def raw_byte():
        sys.stdout.buffer.write(b"raw \\x9b31m")
        return 0

    def crash():
        raise KeyError("boom")

    def hang():
        time.sleep(60)

    def spin():
        while True:
            pass

    def killed():
        os.kill(os.getpid(), signal.SIGSEGV)

    def odd_exit():
        return 3

    def clean():
        print("all fine")
        sys.stderr.write("agentdbg show: run.jsonl:3: a warning\\n")
        return 1

    work = Path(sys.argv[2])
    targets = [escape, bidi, raw_byte, crash, hang, spin, killed, odd_exit, clean]
    steps = [execute.Step(target, [target.__name__], 1.0, work / f"{n}.out", work / f"{n}.err")
             for n, target in enumerate(targets)]
    outcomes = execute.run_in_sequence(steps, work)
    result = {}
    for target, step, outcome in zip(targets, steps, outcomes):
        findings = classify.classify(target.__name__, exit_code=outcome.exit_code,
                                     signal_number=outcome.signal_number, timed_out=outcome.timed_out,
                                     timeout=step.limit, cpu_seconds=outcome.cpu_seconds,
                                     stdout=step.stdout_path.read_bytes(), stderr=step.stderr_path.read_bytes(),
                                     stuck=outcome.stuck)
        result[target.__name__] = [[f.kind, f.detail] for f in findings]
    side = execute.run_side_by_side(steps[4:5] * 3, work)
    result["side_by_side_hangs"] = [outcome.timed_out for outcome in side]
    print(json.dumps(result))
""")


def test_the_harness_sees_each_kind_of_failure(tmp_path):
    tests_dir = Path(__file__).resolve().parent
    process = subprocess.run([sys.executable, "-c", SELF_TEST, str(tests_dir), str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert process.returncode == 0, process.stderr
    result = json.loads(process.stdout)

    def classes(name: str) -> list[str]:
        return [detail.split(": ")[1].split()[0] for _, detail in result[name]]

    assert [kind for kind, _ in result["escape"]] == ["escape", "escape"]
    assert classes("escape") == ["U+001B", "U+0007"]  # ESC, then BEL; tabs, accents, emoji are fine
    assert classes("bidi") == ["U+202E"]
    assert [detail.split(": ")[1] for _, detail in result["raw_byte"]] == ["byte 0x9B"]
    assert result["crash"] == [["traceback", "KeyError: 'boom'"]]
    assert [kind for kind, _ in result["hang"]] == ["hang"] and "stuck blocked" in result["hang"][0][1]
    assert [kind for kind, _ in result["spin"]] == ["hang"]
    assert "stuck busy" in result["spin"][0][1] or "stuck starved" in result["spin"][0][1]  # on a very busy machine
    assert result["killed"] == [["traceback", "killed by SIGSEGV"]]
    assert [kind for kind, _ in result["odd_exit"]] == ["traceback"]
    assert result["clean"] == []
    assert result["side_by_side_hangs"] == [True, True, True]


def test_escape_classes_and_what_is_not_an_escape():
    text = "ok\tand\n é 界 🙂 … \u00a0"
    assert classify.escapes(text, "stdout", "show") == []
    found = classify.escapes("a\x1b[2Jb\x9bc\u202ed\u200be\ud800f\udcffg\x07h", "stdout", "show")
    assert [finding.signature.rsplit("|", 1)[1] for finding in found] == [
        "ESC", "C1 control", "bidi control", "zero-width character", "lone surrogate", "non-UTF-8 byte"]
    assert classify.escapes("bell\x07", "stderr", "check")[0].signature == "escape|stderr|C0 control"


def test_a_traceback_is_summed_up_by_its_exception_and_agentdbg_frame():
    stderr = textwrap.dedent("""\
        agentdbg show: run.jsonl:2: a warning
        Traceback (most recent call last):
          File "/x/site-packages/agentdbg/cli/show.py", line 57, in run
            render(doc)
          File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode
            obj, end = self.scan_once(s, idx)
                       ^^^^^^^^^^^^^^^^^^^^^^
        RecursionError: maximum recursion depth exceeded while decoding a JSON array
        """)
    exception, where = classify.traceback_summary(stderr)
    assert exception == "RecursionError: maximum recursion depth exceeded while decoding a JSON array"
    assert where == "agentdbg/cli/show.py:57 in run"
    [finding] = classify.classify("agentdbg show", exit_code=1, signal_number=None, timed_out=False, timeout=3,
                                  cpu_seconds=0.1, stdout=b"", stderr=stderr.encode())
    assert finding.kind == "traceback" and "RecursionError" in finding.detail


def test_the_debugger_may_refuse_a_file_with_one_message_only():
    def refused(stderr: str) -> list:
        return classify.tui_exit("agentdbg FILE (debugger)", 2, stderr.encode())

    assert refused("agentdbg: run.jsonl: is a named pipe\n") == []
    assert refused("agentdbg: notes.json: not a run format. Formats tried:\n  transcript: no\n  swe-agent: no\n") == []
    assert [f.kind for f in refused("agentdbg: one\nagentdbg: two\n")] == ["other"]
    assert [f.kind for f in refused("  indented first\nagentdbg: then\n")] == ["other"]
    assert [f.kind for f in refused("")] == ["other"]
    assert classify.tui_exit("agentdbg FILE (debugger)", 0, b"anything\nat all\n") == []


def test_the_figures_line_counts_cases_runs_and_each_kind_of_failure():
    report = runner.Report(cases=3, done=3, tried=21)
    for kind in ("traceback", "hang", "hang", "escape", "escape", "escape"):
        report.failures.append(runner.Failure("case", "damaged", "truncated",
                                              classify.Finding(kind, "agentdbg show", "detail", kind)))
    assert runner.summary(report) == ("3 cases tried / 21 command runs / 1 tracebacks / 2 hangs / "
                                      "3 escape leaks")
