"""Hostile text in every field of every format, through every headless command, piped and
on a terminal: nothing but colour sequences reaches the terminal, what draws nothing is
shown, JSON escapes it and still decodes to exactly what the file held, and no command
crashes (a lone surrogate included)."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostile_inputs import (
    BIDI_OVERRIDE,
    EXACT,
    FORMATS,
    HOSTILE,
    NEVER_ON_A_TERMINAL,
    write_input,
)

from agentdbg.cli import main

ROOT = Path(__file__).resolve().parents[1]
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
HUMAN = [("show",), ("show", "--step", "1"), ("show", "--step", "2"), ("show", "--step", "1", "--prompt"),
         ("stats",), ("stats", "--full"), ("check",), ("check", "--fail-on", "damaged,incomplete,final-missing")]
MACHINE = [("show", "--json"), ("show", "--step", "1", "--json"), ("stats", "--json"), ("check", "--json")]


class Terminal:
    """A pseudo-terminal to write to, read from its other end as it is written."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.received = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the other end is closed
                return
            if not chunk:
                return
            self.received += chunk

    def stream(self) -> io.TextIOWrapper:
        return io.TextIOWrapper(open(self.slave, "wb", buffering=0, closefd=False), encoding="utf-8",
                                line_buffering=True, write_through=True)

    def close(self) -> bytes:
        os.close(self.slave)
        self.reader.join(10)
        os.close(self.master)
        return bytes(self.received)


def run(argv: list, monkeypatch, tty: bool) -> tuple[int, bytes, bytes]:
    """Run ``agentdbg argv`` in this process, its output going to a pipe or a terminal as a
    strict UTF-8 stream (a lone surrogate written to it raises, as on a real stdout)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "100")
    if tty:
        out_terminal, err_terminal = Terminal(), Terminal()
        stdout, stderr = out_terminal.stream(), err_terminal.stream()
    else:
        out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
        stdout = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
        stderr = io.TextIOWrapper(err_bytes, encoding="utf-8", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit:  # argparse refused the arguments
        code = exit.code
    finally:
        stdout.flush()
        stderr.flush()
        monkeypatch.undo()
    if tty:
        return code, out_terminal.close(), err_terminal.close()
    return code, out_bytes.getvalue(), err_bytes.getvalue()


def assert_safe_for_a_terminal(data: bytes, tty: bool, where: str) -> str:
    text = data.decode("utf-8")  # strictly: no lone surrogate was written
    if tty:
        text = text.replace("\r\n", "\n")  # the terminal's own line ends
        without_colours = COLOUR.sub("", text)
    else:
        assert not COLOUR.search(text), f"{where}: colour sequences into a pipe"
        without_colours = text
    found = NEVER_ON_A_TERMINAL.search(without_colours)
    assert found is None, f"{where}: {found.group()!r} reached the terminal near {without_colours[max(found.start() - 40, 0):found.end() + 40]!r}"
    assert "Traceback" not in text, f"{where}: {text[-2000:]}"
    return without_colours


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    return {kind: write_input(kind, folder) for kind in FORMATS}


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
@pytest.mark.parametrize("kind", FORMATS)
def test_human_output_shows_hostile_text_harmlessly(kind: str, tty: bool, inputs, monkeypatch) -> None:
    for command in HUMAN:
        where = f"{' '.join(command)} on {kind}"
        code, out, err = run([*command, inputs[kind]], monkeypatch, tty)
        assert code in (0, 1), f"{where}: exit {code}: {err.decode('utf-8', 'replace')}"
        shown = assert_safe_for_a_terminal(out, tty, where)
        assert_safe_for_a_terminal(err, tty, where + " (stderr)")
        if command[0] == "show":
            assert "<U+202E>" in shown, f"{where}: the hostile text is not shown"
            assert "[red]m[/red]" in shown, f"{where}: markup is not shown as written"
        if tty and command == ("show",):
            assert COLOUR.search(out.decode()), "a terminal gets colours"


@pytest.mark.parametrize("kind", FORMATS)
def test_json_output_escapes_hostile_text_and_decodes_to_it_exactly(kind: str, inputs, monkeypatch) -> None:
    for command in MACHINE:
        where = f"{' '.join(command)} on {kind}"
        code, out, err = run([*command, inputs[kind]], monkeypatch, tty=False)
        assert code in (0, 1), f"{where}: exit {code}: {err.decode('utf-8', 'replace')}"
        text = out.decode("utf-8")
        assert "\x1b" not in text and NEVER_ON_A_TERMINAL.search(text) is None, where
        decoded = [json.loads(line) for line in text.splitlines() if line]
        assert decoded, where
        if command[:2] == ("show", "--json"):
            texts = strings(decoded)
            if kind in EXACT:
                assert HOSTILE in texts, f"{where}: the file's text does not come back exactly"
            assert any(BIDI_OVERRIDE in s for s in texts), f"{where}: escaped characters do not decode back"


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
@pytest.mark.parametrize("kind", [kind for kind in FORMATS if kind not in ("trace", "plan")])
def test_convert_reports_harmlessly_and_keeps_the_text(kind: str, tty: bool, inputs, tmp_path, monkeypatch) -> None:
    output = tmp_path / "converted.jsonl"
    code, out, err = run(["convert", inputs[kind], "-o", output], monkeypatch, tty)
    assert code == 0, err.decode("utf-8", "replace")
    assert "->" in assert_safe_for_a_terminal(out, tty, f"convert {kind}")
    assert_safe_for_a_terminal(err, tty, f"convert {kind} (stderr)")
    code, out, err = run(["show", output], monkeypatch, tty)
    assert code == 0 and "<U+202E>" in assert_safe_for_a_terminal(out, tty, f"show converted {kind}")
    if kind in EXACT:
        code, out, _ = run(["show", "--json", output], monkeypatch, tty=False)
        assert HOSTILE in strings([json.loads(line) for line in out.decode().splitlines()])


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
def test_record_reports_a_hostile_plan_harmlessly(tty: bool, inputs, tmp_path, monkeypatch) -> None:
    output = tmp_path / "recorded.jsonl"
    code, out, err = run(["record", inputs["plan"], "-o", output], monkeypatch, tty)
    assert code == 0, err.decode("utf-8", "replace")
    assert "<U+202E>" in assert_safe_for_a_terminal(out, tty, "record")
    assert_safe_for_a_terminal(err, tty, "record (stderr)")


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
def test_error_messages_naming_hostile_files_or_arguments_are_harmless(tty: bool, inputs, tmp_path, monkeypatch) -> None:
    name = "x\x1b]2;PWNED\x07\u202e\u200b\ud800"
    missing = tmp_path / name.replace("\ud800", "")
    trace = inputs["trace"]
    for argv in (["show", missing], ["stats", missing], ["check", missing], ["convert", missing, "-o", tmp_path / "o"],
                 ["record", missing, "-o", tmp_path / "o"], ["show", "--format", name, trace],
                 ["check", "--fail-on", name, trace], ["show", "--bogus", name, trace], ["--bogus", name],
                 ["show", "--run", "9", trace]):
        code, out, err = run(argv, monkeypatch, tty)
        where = " ".join(map(str, argv[:1]))
        assert code == 2, where
        assert_safe_for_a_terminal(out, tty, where)
        assert assert_safe_for_a_terminal(err, tty, f"{where} (stderr)").strip(), f"{where}: no message"


# -- end to end: the real program, a real pipe, a real terminal ------------------------------


def run_program(argv: list, tty: bool) -> tuple[int, bytes]:
    command = [sys.executable, "-m", "agentdbg", *map(str, argv)]
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    if not tty:
        done = subprocess.run(command, capture_output=True, env=env, timeout=60)
        return done.returncode, done.stdout + done.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    received = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    return process.wait(60), bytes(received)


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
def test_a_swe_agent_exit_status_cannot_set_the_clipboard_or_the_title(tty: bool, tmp_path) -> None:
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"trajectory": [{"thought": "t", "action": "ls", "observation": "o"}] * 2,
                                "info": {"exit_status": "\x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;PWNED\x07submitted"}}))
    code, output = run_program(["stats", path], tty)
    assert code == 0
    text = assert_safe_for_a_terminal(output, tty, "stats")
    assert "submitted" in text and "PWNED" not in text


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
def test_a_lone_surrogate_crashes_no_command(tty: bool, tmp_path) -> None:
    path = tmp_path / "surrogate.jsonl"
    path.write_text('{"type":"header","format":"agentdbg-trace","version":1}\n'
                    '{"type":"run_start","step":0,"task":"task \\ud800"}\n{"type":"step","step":1}\n'
                    '{"type":"error","step":1,"kind":"k\\udfff","message":"m"}\n'
                    '{"type":"run_end","step":1,"outcome":"\\ud800","steps":1}\n', encoding="ascii")
    for argv in (["show", path], ["show", "--step", "1", path], ["stats", path], ["check", path],
                 ["show", "--json", path], ["stats", "--json", path]):
        code, output = run_program(argv, tty)
        assert code in (0, 1), output
        text = assert_safe_for_a_terminal(output, tty, argv[0])
        assert "<U+D800>" in text or "\\ud800" in text
