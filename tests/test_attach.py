"""The channel between a recorded agent and a debugger (agentdbg.attach): pausing and
resuming at a step, timeouts, detaching, and files in the socket's place that must be
refused or replaced without hanging either side."""

from __future__ import annotations

import json
import os
import queue
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import agentdbg
from agentdbg.attach import debugger as debugger_side
from agentdbg.attach.agent import AgentChannel, attach_requested
from agentdbg.attach.debugger import AgentLink, agent_socket
from agentdbg.attach.protocol import ChannelError, channel_path
from agentdbg.trace.reader import open_trace

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "sample_plans"
WAIT = 10.0


class Debugger:
    """A debugger's link to an agent, its messages in a queue."""

    def __init__(self, trace: Path):
        self.messages: queue.Queue[dict] = queue.Queue()
        self.closed: queue.Queue[str] = queue.Queue()
        self.link = AgentLink.connect(trace, self.messages.put, self.closed.put)
        assert self.link is not None

    def next(self, kind: str) -> dict:
        deadline = time.monotonic() + WAIT
        while True:
            message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            if message["type"] == kind:
                return message


def in_thread(fn, *args):
    """Run ``fn(*args)`` in a thread; the returned queue gets its result."""
    result: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: result.put(fn(*args)), daemon=True).start()
    return result


def test_nobody_attached_a_step_goes_on_without_waiting_and_the_socket_is_private(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace, answer_timeout=60) as channel:
        path = channel_path(trace)
        assert path == tmp_path / "run.jsonl.agentdbg.sock"
        info = os.lstat(path)
        assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        started = time.monotonic()
        assert channel.step_written(1, 100) is None
        assert time.monotonic() - started < 30  # it never waited for an answer
    assert not os.path.lexists(path)  # removed at the end


def test_a_debugger_pauses_the_agent_at_a_step_until_it_says_go(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace, pause_timeout=60) as channel:
        debugger = Debugger(trace)
        assert channel.wait_for_debugger(WAIT)
        pause = in_thread(channel.step_written, 3, 1234)
        request = debugger.next("step")
        assert (request["step"], request["end"], request["ended"]) == (3, 1234, False)
        debugger.link.answer(request["id"], go=False, reason="tool error: boom")
        time.sleep(0.3)
        assert pause.empty()  # the agent is held
        debugger.link.resume(request["id"])
        result = pause.get(timeout=WAIT)
        assert (result.step, result.ended, result.reason) == (3, "resumed", "tool error: boom")
        assert result.waited >= 0.25
        event = result.event()
        assert (event.type, event.step, event.ended) == ("pause", 3, "resumed")
        # A step it is told to go on from is not held.
        going = in_thread(channel.step_written, 4, 2000)
        debugger.link.answer(debugger.next("step")["id"], go=True)
        assert going.get(timeout=WAIT) is None


def test_a_paused_agent_goes_on_by_itself_after_its_pause_timeout_and_says_so(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace, pause_timeout=0.5) as channel:
        debugger = Debugger(trace)
        assert debugger.link.pause_timeout == 0.5  # told in the hello
        channel.wait_for_debugger(WAIT)
        pause = in_thread(channel.step_written, 2, 500)
        debugger.link.answer(debugger.next("step")["id"], go=False, reason="repeat")
        result = pause.get(timeout=WAIT)
        assert result.ended == "timeout" and result.waited >= 0.5
        went_on = debugger.next("went_on")
        assert went_on["why"] == "timeout" and went_on["waited"] >= 0.5


def test_a_debugger_that_detaches_lets_a_paused_agent_go_on_at_once(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace, pause_timeout=60) as channel:
        debugger = Debugger(trace)
        channel.wait_for_debugger(WAIT)
        pause = in_thread(channel.step_written, 2, 500)
        debugger.link.answer(debugger.next("step")["id"], go=False)
        time.sleep(0.2)
        debugger.link.detach()
        result = pause.get(timeout=WAIT)
        assert result.ended == "detached" and result.waited < 30
        assert channel.step_written(3, 600) is None  # nobody attached now
        # Another debugger can attach afterwards.
        again = Debugger(trace)
        assert channel.wait_for_debugger(WAIT)
        again.link.detach()


def test_a_debugger_killed_while_the_agent_is_paused_lets_it_go_on(tmp_path):
    trace = tmp_path / "run.jsonl"
    code = ("import sys, time\nfrom agentdbg.attach.debugger import AgentLink\n"
            "def said(m):\n"
            "    if m['type'] == 'step':\n"
            "        link.answer(m['id'], go=False); print('paused', flush=True)\n"
            "link = AgentLink.connect(sys.argv[1], said, lambda why: None)\n"
            "print('attached', flush=True)\ntime.sleep(60)\n")
    with AgentChannel(trace, pause_timeout=60) as channel:
        process = subprocess.Popen([sys.executable, "-c", code, str(trace)], stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout.readline().strip() == "attached"
            assert channel.wait_for_debugger(WAIT)
            pause = in_thread(channel.step_written, 1, 10)
            assert process.stdout.readline().strip() == "paused"
            process.kill()
            assert pause.get(timeout=WAIT).ended == "detached"
        finally:
            process.kill()
            process.wait()
            process.stdout.close()


def test_a_debugger_that_never_answers_costs_one_wait_then_is_let_go(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace, answer_timeout=0.3) as channel:
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.connect(str(channel_path(trace)))
        assert channel.wait_for_debugger(WAIT)
        started = time.monotonic()
        assert channel.step_written(1, 10) is None
        assert time.monotonic() - started >= 0.3
        assert not channel.attached
        started = time.monotonic()
        assert channel.step_written(2, 20) is None
        assert time.monotonic() - started < 0.3  # no second wait
        silent.close()


def test_a_second_debugger_is_told_another_is_attached(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace):
        first = Debugger(trace)
        with pytest.raises(ChannelError, match=r"another debugger \(pid \d+\) is attached"):
            AgentLink.connect(trace, lambda m: None, lambda why: None)
        first.link.detach()


def test_a_debugger_sending_garbage_is_dropped_and_the_agent_goes_on(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace, answer_timeout=30) as channel:
        for garbage in (b"not json\n", b"[1, 2]\n", b"x" * (70 * 1024)):
            rogue = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            rogue.connect(str(channel_path(trace)))
            assert channel.wait_for_debugger(WAIT)
            pause = in_thread(channel.step_written, 1, 10)
            rogue.sendall(garbage)
            assert pause.get(timeout=WAIT) is None
            rogue.close()
        debugger = Debugger(trace)  # a real one still attaches
        debugger.link.detach()


def test_the_bye_at_the_end_closes_the_link(tmp_path):
    trace = tmp_path / "run.jsonl"
    channel = AgentChannel(trace)
    debugger = Debugger(trace)
    channel.wait_for_debugger(WAIT)
    channel.step_written(4, 90, ended=True)
    assert debugger.next("step")["ended"] is True
    channel.close()
    assert debugger.closed.get(timeout=WAIT) == "the recording ended"


# --- what is in the socket's place --------------------------------------------------------

def test_a_symlink_in_the_socket_place_is_refused_by_both_sides(tmp_path):
    trace = tmp_path / "run.jsonl"
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    channel_path(trace).symlink_to(target)
    with pytest.raises(ChannelError, match="symbolic link"):
        AgentChannel(trace)
    with pytest.raises(ChannelError, match="symbolic link"):
        AgentLink.connect(trace, lambda m: None, lambda why: None)
    assert target.read_text() == "keep me" and os.path.islink(channel_path(trace))


def test_a_regular_file_in_the_socket_place_is_neither_replaced_nor_read_as_a_pointer(tmp_path):
    trace = tmp_path / "run.jsonl"
    channel_path(trace).write_text("my notes\n")
    with pytest.raises(ChannelError, match="not an agent's channel; not replaced"):
        AgentChannel(trace)
    assert channel_path(trace).read_text() == "my notes\n"
    with pytest.raises(ChannelError, match="does not name an agent's socket"):
        AgentLink.connect(trace, lambda m: None, lambda why: None)
    # A pointer that others could rewrite is not followed either.
    channel_path(trace).write_text(json.dumps({"socket": "/tmp/x.sock"}))
    os.chmod(channel_path(trace), 0o666)
    with pytest.raises(ChannelError, match="writable by others"):
        agent_socket(trace)


def test_a_stale_socket_is_not_attached_to_and_the_next_agent_replaces_it(tmp_path):
    trace = tmp_path / "run.jsonl"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(channel_path(trace)))
    dead.close()  # the file stays, nothing listens: an agent that crashed
    assert AgentLink.connect(trace, lambda m: None, lambda why: None) is None
    with AgentChannel(trace):
        debugger = Debugger(trace)
        debugger.link.detach()


def test_another_agent_listening_there_is_not_replaced(tmp_path):
    trace = tmp_path / "run.jsonl"
    with AgentChannel(trace):
        with pytest.raises(ChannelError, match="another agent listens there"):
            AgentChannel(trace)
        assert agent_socket(trace) == channel_path(trace)


def test_a_socket_that_never_says_hello_does_not_hang_the_debugger(tmp_path, monkeypatch):
    monkeypatch.setattr(debugger_side, "CONNECT_TIMEOUT", 0.3)
    trace = tmp_path / "run.jsonl"
    for accepts in (False, True):
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mute.bind(str(channel_path(trace)))
        mute.listen(1)
        accepted = []
        if accepts:  # it accepts, then sends a byte and nothing more
            def serve(listener=mute, accepted=accepted):
                conn, _ = listener.accept()
                conn.sendall(b"{")
                accepted.append(conn)
            threading.Thread(target=serve, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(ChannelError, match="did not say hello"):
            AgentLink.connect(trace, lambda m: None, lambda why: None)
        assert time.monotonic() - started < 5
        for conn in accepted:
            conn.close()
        mute.close()
        os.unlink(channel_path(trace))


def test_a_trace_path_too_long_for_a_socket_gets_a_pointer_to_a_private_directory(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    trace = deep / "run.jsonl"
    with AgentChannel(trace) as channel:
        pointer = channel_path(trace)
        assert stat.S_ISREG(os.lstat(pointer).st_mode) and stat.S_IMODE(os.lstat(pointer).st_mode) == 0o600
        socket_path = channel.socket_path
        assert stat.S_IMODE(os.stat(socket_path.parent).st_mode) == 0o700
        assert agent_socket(trace) == socket_path
        debugger = Debugger(trace)
        assert channel.wait_for_debugger(WAIT)
        debugger.link.detach()
    assert not os.path.lexists(pointer) and not os.path.lexists(socket_path.parent)


# --- the recorder and agentdbg record ---------------------------------------------------

def search(title: str) -> int:
    """Copies of a title."""
    return {"a": 5}[title]


def test_the_recorder_writes_each_pause_to_the_trace_after_its_step(tmp_path):
    trace = tmp_path / "run.jsonl"
    with agentdbg.record(trace, task="t", tools=[search], attach=True, pause_timeout=60) as rec:
        debugger = Debugger(trace)
        assert rec.channel.wait_for_debugger(WAIT)

        def answer():
            request = debugger.next("step")
            debugger.link.answer(request["id"], go=False, reason="tool error")
            time.sleep(0.1)
            debugger.link.resume(request["id"])
        threading.Thread(target=answer, daemon=True).start()
        rec.call("search", {"title": "missing"})
        rec.answer("none")
    assert not os.path.lexists(channel_path(trace))
    document = open_trace(trace)
    document.wait()
    run = document.runs[0]
    pause = [event for event in run.record(1).events if event.type == "pause"]
    assert len(pause) == 1 and pause[0].ended == "resumed" and pause[0].reason == "tool error"
    label, text = run.record(1).transcript()[-1]
    assert label == "Paused" and "waited" in text and "tool error" in text and "resumed" in text
    document.close()


def test_attach_comes_from_the_argument_or_the_environment(monkeypatch):
    monkeypatch.delenv("AGENTDBG_ATTACH", raising=False)
    assert attach_requested(None) is None
    assert attach_requested(True) == "on" and attach_requested("wait") == "wait" and attach_requested(False) is None
    monkeypatch.setenv("AGENTDBG_ATTACH", "1")
    assert attach_requested(None) == "on"
    assert attach_requested(False) is None  # the argument wins
    monkeypatch.setenv("AGENTDBG_ATTACH", "wait")
    assert attach_requested(None) == "wait"
    monkeypatch.setenv("AGENTDBG_ATTACH", "maybe")
    with pytest.raises(ValueError, match="attach should be"):
        attach_requested(None)


def test_record_refuses_a_bad_pause_timeout_and_leaves_no_socket(tmp_path):
    with pytest.raises(ValueError, match="pause_timeout should be a number of seconds above 0"):
        agentdbg.record(tmp_path / "run.jsonl", attach=True, pause_timeout=0)
    assert not os.path.lexists(channel_path(tmp_path / "run.jsonl"))
    # Without attach no socket is made at all.
    with agentdbg.record(tmp_path / "plain.jsonl", attach=False) as rec:
        assert rec.channel is None
        assert not os.path.lexists(channel_path(tmp_path / "plain.jsonl"))
        rec.answer("x")


def test_record_cli_attach_pauses_a_plan_at_its_error_step(tmp_path):
    trace = tmp_path / "run.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "agentdbg", "record", str(PLANS / "library_hallucinating.toml"),
                                "-o", str(trace), "--attach", "wait", "--pause-timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "a debugger can attach" in process.stderr.readline()
        deadline = time.monotonic() + WAIT
        while not os.path.lexists(channel_path(trace)) and time.monotonic() < deadline:
            time.sleep(0.02)
        debugger = Debugger(trace)
        request = debugger.next("step")
        assert request["step"] == 1
        debugger.link.answer(request["id"], go=False, reason="tool error")
        time.sleep(0.3)
        assert process.poll() is None  # held at step 1
        debugger.link.detach()
        assert process.wait(WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    pauses = [event for event in events if event["type"] == "pause"]
    assert [(p["step"], p.get("ended", "resumed")) for p in pauses] == [(1, "detached")]
    assert events[-1]["type"] == "run_end"
    assert not os.path.lexists(channel_path(trace))


def test_record_cli_pause_timeout_needs_attach(tmp_path):
    out = subprocess.run([sys.executable, "-m", "agentdbg", "record", str(PLANS / "library_good.toml"),
                          "-o", str(tmp_path / "run.jsonl"), "--pause-timeout", "5"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "--pause-timeout is for --attach" in out.stderr
