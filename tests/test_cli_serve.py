"""``agentdbg serve``: the debugger over textual-serve, on loopback unless --public."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from agentdbg.cli import main
from agentdbg.cli.serve import debugger_command, is_loopback


def test_only_loopback_addresses_count_as_this_machine():
    for host in ("127.0.0.1", "127.8.9.1", "localhost", "::1", "[::1]", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com", "localhost.evil.com", ""):
        assert not is_loopback(host), host


def test_a_public_address_is_refused_without_public(capsys):
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0" in err and "--public" in err


def test_bad_port_and_missing_file_are_refused_before_serving(capsys, tmp_path):
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port must be 1 to 65535" in capsys.readouterr().err
    assert main(["serve", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_each_page_runs_the_debugger_with_the_same_options():
    from argparse import Namespace

    args = Namespace(file="my run.jsonl", format=None, allow_code=False, allow_network=True, approve="never", run=2)
    command = debugger_command(args)
    assert command.endswith("-m agentdbg 'my run.jsonl' --allow-network --approve never --run 2")
    args.plan = "the plan.toml"  # what a fork re-runs the runs with
    assert debugger_command(args).endswith("--approve never --plan 'the plan.toml' --run 2")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_answers_with_the_page_on_loopback():
    pytest.importorskip("textual_serve", reason="agentdbg[web] is not installed")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "agentdbg", "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        page = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
                    page = reply.read().decode()
                    break
            except OSError:
                time.sleep(0.1)
        assert page is not None, server.stderr.read().decode() if server.poll() is not None else "no answer"
        assert "agentdbg demo" in page and f"ws://127.0.0.1:{port}/ws" in page
    finally:
        server.terminate()
        server.wait(10)


def test_keys_lists_every_binding_and_checks_the_keymap(tmp_path, capsys):
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('"step.forward" = "j"\n"bogus" = "x"\n')
    assert main(["keys", "--keymap", str(keymap)]) == 1
    out, err = capsys.readouterr()
    assert "remaps 1 binding" in out and "*step.forward" in out and "timeline.page_down" in out
    assert f"{keymap}:2: 'bogus' is not a binding id" in err
    assert main(["keys", "--keymap", str(tmp_path / "none.toml")]) == 0
    assert "every key is the default" in capsys.readouterr().out


def test_public_serves_anywhere_with_a_warning(monkeypatch, capsys):
    pytest.importorskip("textual_serve", reason="agentdbg[web] is not installed")
    served: list[tuple[str, str, int]] = []

    class FakeServer:  # nothing listens: the test only looks at what would be served
        def __init__(self, command, host, port, title):
            served.append((command, host, port))

        def serve(self):
            pass

    monkeypatch.setattr("textual_serve.server.Server", FakeServer)
    assert main(["serve", "--host", "0.0.0.0", "--port", "8123", "--public"]) == 0
    err = capsys.readouterr().err
    assert "WARNING" in err and "anyone who can reach this port sees the run" in err
    [(command, host, port)] = served
    assert host == "0.0.0.0" and port == 8123 and command.endswith("-m agentdbg")
