"""``agentdbg serve``: the debugger over textual-serve, on loopback unless --public, behind
a token, answering only to its own address and its own page, its paths kept in the
folder served. Real servers on loopback ports are attacked here, and opened in headless
Chromium when it is installed."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shlex
import shutil
import signal
import textwrap
from argparse import Namespace
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from serve_support import (
    CHROMIUM,
    START_SECONDS,
    TERMINAL_COLOURS,
    TOKEN,
    Browser,
    drive,
    free_port,
    get,
    serving,
)

from agentdbg.cli import main
from agentdbg.cli.serve import debugger_command, is_loopback
from agentdbg.web.guard import TOKEN_ENV, Guard, split_host, token_problem

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HAS_WEB = importlib.util.find_spec("textual_serve") is not None
needs_web = pytest.mark.skipif(not HAS_WEB, reason="agentdbg[web] is not installed")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


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


def test_each_page_runs_the_debugger_with_the_same_options_in_the_folder_served(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = Namespace(file="runs/my run.jsonl", format=None, allow_code=False, allow_network=True, approve="never",
                     run=2, allow_any_path=False)
    command = debugger_command(args)
    assert command.endswith(f"-m agentdbg '{tmp_path}/runs/my run.jsonl' --allow-network --approve never --run 2 "
                            f"--confine {tmp_path}/runs")
    assert debugger_command(Namespace(**{**vars(args), "file": None})).endswith(f"--confine {tmp_path}")
    assert "--confine" not in debugger_command(Namespace(**{**vars(args), "allow_any_path": True}))
    args.plan = "the plan.toml"  # what a fork re-runs the runs with, wherever the debugger runs
    assert f"--approve never --plan '{tmp_path}/the plan.toml' --run 2" in debugger_command(args)


# -- the guard, as data ---------------------------------------------------------------------------


def test_a_host_header_is_a_name_and_a_port():
    assert split_host("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert split_host("[::1]:8000") == ("::1", 8000)
    assert split_host("localhost") == ("localhost", 80)
    for bad in ("::1:8000", "[::1", "[::1]x", "host:", "host:+80", "host:８０００", "host:123456", ":8000", "a:1:2"):
        assert split_host(bad) is None, bad


def test_the_host_must_name_the_address_listened_on():
    guard = Guard.listening("127.0.0.1", 8000, TOKEN)
    for host in ("127.0.0.1:8000", "localhost:8000", "LocalHost:8000", "[::1]:8000", "[0:0:0:0:0:0:0:1]:8000"):
        assert guard.host_refusal(host) is None, host
    for host in ("evil.example:8000", "localhost.evil.example:8000", "127.0.0.1.evil.example:8000", "localhost.:8000",
                 "127.0.0.1:8001", "127.0.0.1", "10.0.0.2:8000", "", None, "127.0.0.1:8000\x1b[2J"):
        refusal = guard.host_refusal(host)
        assert refusal, host
        assert "\x1b" not in refusal
    assert "answers to 127.0.0.1, [::1], localhost only" in guard.host_refusal("evil.example:8000")
    named = Guard.listening("debug-box.lan", 8000, TOKEN)
    assert named.host_refusal("debug-box.lan:8000") is None and named.host_refusal("evil.example:8000")
    anywhere = Guard.listening("0.0.0.0", 8000, TOKEN)  # --public: the machine's addresses, never a name
    assert anywhere.host_refusal("192.168.1.5:8000") is None and anywhere.host_refusal("[fe80::1]:8000") is None
    assert "or an IP address only" in anywhere.host_refusal("evil.example:8000")


def test_a_websocket_origin_must_be_the_page_itself():
    guard = Guard.listening("127.0.0.1", 8000, TOKEN)
    assert guard.origin_refusal("http://127.0.0.1:8000", "127.0.0.1:8000") is None
    assert guard.origin_refusal("http://LOCALHOST:8000", "localhost:8000") is None
    for origin in ("http://evil.example", "http://127.0.0.1:8001", "http://localhost:8000", "null", "",
                   "http://127.0.0.1:8000.evil.example", None):
        assert guard.origin_refusal(origin, "127.0.0.1:8000"), origin


def test_only_the_token_itself_passes():
    guard = Guard.listening("127.0.0.1", 8000, TOKEN)
    assert guard.token_refusal(TOKEN) is None
    assert guard.token_refusal(None, TOKEN) is None  # (the websocket's: in its path)
    for wrong in (TOKEN.upper(), TOKEN[:-1], TOKEN + "0", TOKEN[:8], " " + TOKEN, "é" * 27, "\udcff", "x"):
        assert guard.token_refusal(wrong).startswith("wrong token"), wrong
    assert guard.token_refusal(None, "").startswith("no token")


def test_a_chosen_token_must_be_long_and_fit_in_a_url():
    assert token_problem("a" * 16) is None and token_problem("Az09-_.~" * 2) is None
    assert "at least 16 characters" in token_problem("short")
    assert "letters, digits" in token_problem("a" * 15 + "/") and token_problem("a" * 15 + "é")


# -- the command line -----------------------------------------------------------------------------


class Recorded:
    """The server the command would start (nothing listens)."""

    def __init__(self, monkeypatch):
        from agentdbg.web.server import GuardedServer

        self.servers: list = []
        monkeypatch.setattr(GuardedServer, "serve", lambda server: self.servers.append(server))


@needs_web
def test_public_serves_anywhere_with_a_warning_and_still_a_token(monkeypatch, capsys):
    recorded = Recorded(monkeypatch)
    assert main(["serve", "--host", "0.0.0.0", "--port", "8123", "--public"]) == 0
    err = capsys.readouterr().err
    assert "WARNING" in err and "has the token sees the run" in err
    [server] = recorded.servers
    assert server.host == "0.0.0.0" and server.port == 8123 and "-m agentdbg --confine " in server.command
    assert len(server.guard.token) >= 40 and server.guard.token_refusal(None) is not None


@needs_web
@pytest.mark.parametrize("argv, env, said", [
    (["--public", "--host", "0.0.0.0", "--token", ""], {}, "--token: empty (there is no serving without a token)"),
    (["--token", "guessable"], {}, "--token: the token must be at least 16 characters long, got 9"),
    ([], {TOKEN_ENV: "short"}, f"{TOKEN_ENV}: the token must be at least 16"),
    (["--public", "--host", "0.0.0.0"], {TOKEN_ENV: "has a space in it, sadly"}, "letters, digits and - _ . ~"),
])
def test_there_is_no_serving_without_a_usable_token(monkeypatch, capsys, argv, env, said):
    recorded = Recorded(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", *argv]) == 2
    assert said in capsys.readouterr().err and not recorded.servers


@needs_web
def test_the_token_may_come_from_the_environment_which_the_debuggers_do_not_see(monkeypatch):
    import os

    recorded = Recorded(monkeypatch)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert main(["serve"]) == 0
    [server] = recorded.servers
    assert server.guard.token == TOKEN and TOKEN_ENV not in os.environ
    assert main(["serve", "--token", "another-token-of-enough-length"]) == 0
    assert recorded.servers[1].guard.token == "another-token-of-enough-length"
    assert main(["serve"]) == 0
    assert recorded.servers[2].guard.token not in (TOKEN, recorded.servers[0].guard.token)  # a new one each time


# -- a real server, attacked ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not HAS_WEB:
        pytest.skip("agentdbg[web] is not installed")
    folder = tmp_path_factory.mktemp("served")
    with serving("--token", TOKEN, cwd=folder) as server:
        yield server
    assert "Traceback" not in server.output(), server.output()


@needs_web
def test_the_page_needs_the_token(served):
    port = served.port
    status, page = get(port, f"/?token={TOKEN}")
    assert status == 200
    assert b"<title>agentdbg demo</title>" in page and f"ws://127.0.0.1:{port}/ws/{TOKEN}".encode() in page
    assert served.url == f"http://127.0.0.1:{port}/?token={TOKEN}"
    for path in ("/", "/?token=", f"/?token={TOKEN.upper()}", f"/?token={TOKEN[:-1]}", f"/?token={TOKEN}x",
                 f"/?token={TOKEN[:10]}", f"/?other={TOKEN}", f"/x?token={TOKEN[:-1]}", "/download/anything"):
        status, body = get(port, path)
        assert status == 403 and b"token" in body, path


@needs_web
def test_a_name_pointed_at_this_machine_is_refused_on_the_page_and_the_websocket(served):
    port = served.port
    for host in (f"evil.example:{port}", f"localhost.evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}", None):
        status, body = get(port, f"/?token={TOKEN}", host=host)
        assert status in (400, 403), host
        status, body = get(port, f"/ws/{TOKEN}", host=host, websocket=True,
                           headers={"Origin": f"http://{host}"} if host else {})
        assert status in (400, 403), host
    status, body = get(port, f"/?token={TOKEN}", host=f"evil.example:{port}")
    assert b"answers to 127.0.0.1, [::1], localhost only" in body
    status, _ = get(port, f"/?token={TOKEN}", host=f"localhost:{port}")
    assert status == 200


@needs_web
def test_a_websocket_from_another_origin_or_without_the_token_is_refused(served):
    port = served.port
    own = {"Origin": served.origin}
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", f"http://localhost:{port}"):
        status, body = get(port, f"/ws/{TOKEN}", websocket=True, headers={"Origin": origin})
        assert status == 403 and b"another site" in body, origin
    status, body = get(port, f"/ws/{TOKEN}", websocket=True)
    assert status == 403 and b"without an Origin" in body
    for path in ("/ws/", "/ws", f"/ws/{TOKEN.upper()}", f"/ws/{TOKEN[:-1]}", f"/ws/{TOKEN}x"):
        status, body = get(port, path, websocket=True, headers=own)
        assert status == 403 and b"token" in body, path
    status, _ = get(port, f"/ws/{TOKEN}", websocket=True, headers=own)
    assert status == 101


@needs_web
def test_static_files_are_the_packages_own_and_list_nothing(served):
    port = served.port
    for path in ("/static/js/textual.js", "/assets/page.css", "/assets/RobotoMono-VariableFont_wght.ttf"):
        assert get(port, path)[0] == 200, path
    for path in ("/static/", "/static/js/", "/assets/", "/static/../server.py", "/static/%2e%2e/server.py",
                 "/assets/../guard.py"):
        status, body = get(port, path)
        assert status in (403, 404) and b"import" not in body, path
    assert get(port, "/static/js/textual.js", host="evil.example")[0] == 403


@needs_web
def test_the_page_names_the_file_without_running_its_name_as_html(tmp_path):
    hostile = tmp_path / "<img src=x onerror=alert(1)>.jsonl"
    shutil.copy(any_trace(), hostile)
    with serving(str(hostile), "--token", TOKEN) as server:
        status, page = get(server.port, f"/?token={TOKEN}")
    assert status == 200 and b"<img" not in page
    assert b"agentdbg &lt;img src=x onerror=alert(1)&gt;.jsonl</title>" in page


def any_trace() -> Path:
    return FIXTURES / "hostile" / "hostile.jsonl"


@needs_web
async def test_a_path_outside_the_folder_served_is_refused_by_the_page(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    outside = tmp_path / "secret.jsonl"
    shutil.copy(any_trace(), outside)
    with serving("--token", TOKEN, cwd=folder) as server:
        # o (on the demo, the dialog opens empty), a path outside: the dialog says it is refused; Enter: so it is.
        await drive(server, ["o", str(outside), "\r"], ["n steps", "Open", "refused: ", "Outside the folder served"])


@needs_web
async def test_ctrl_c_tells_each_page_the_server_stopped(tmp_path):
    import aiohttp

    with serving("--token", TOKEN, cwd=tmp_path) as server:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"http://127.0.0.1:{server.port}/ws/{TOKEN}",
                                          headers={"Origin": server.origin}) as websocket:
                message = await websocket.receive(timeout=START_SECONDS)
                assert message.type == aiohttp.WSMsgType.BINARY  # the debugger draws
                server.process.send_signal(signal.SIGINT)
                while message.type == aiohttp.WSMsgType.BINARY:
                    message = await websocket.receive(timeout=START_SECONDS)
                assert message.type == aiohttp.WSMsgType.CLOSE
                assert (message.data, message.extra) == (1001, "agentdbg serve stopped")
        assert await asyncio.get_running_loop().run_in_executor(None, server.process.wait, START_SECONDS) == 0
    assert "Traceback" not in server.output()


# -- what a page sends, in-process -------------------------------------------------------------------

# A stand-in debugger: says it is a Textual app, then logs every packet the server sends it.
PACKET_LOGGER = textwrap.dedent("""
    import json, os, sys
    log = open(sys.argv[1], "a")
    log.write(json.dumps(["size", os.environ["COLUMNS"], os.environ["ROWS"]]) + "\\n"); log.flush()
    sys.stdout.write("__GANGLION__\\n"); sys.stdout.flush()
    while len(head := sys.stdin.buffer.read(5)) == 5:
        payload = sys.stdin.buffer.read(int.from_bytes(head[1:], "big")).decode("utf-8", "replace")
        log.write(json.dumps([head[:1].decode(), payload]) + "\\n"); log.flush()
        if head[:1] == b"M" and json.loads(payload)["type"] == "quit":
            break
""")


# A debugger stuck in a tool: it never reads what it is sent, nor quits.
STUCK = 'import sys, time; sys.stdout.write("__GANGLION__\\n"); sys.stdout.flush(); time.sleep(600)'


@asynccontextmanager
async def in_process(tmp_path: Path, debugger: str = PACKET_LOGGER):
    """A GuardedServer in this process, its debugger the packet logger (or ``debugger``);
    yields it and the log's path."""
    import sys

    from aiohttp import web

    from agentdbg.web.server import GuardedServer

    script, log = tmp_path / "logger.py", tmp_path / "packets.jsonl"
    script.write_text(debugger)
    port = free_port()
    server = GuardedServer(shlex.join([sys.executable, str(script), str(log)]), host="127.0.0.1", port=port,
                           title="t", guard=Guard.listening("127.0.0.1", port, TOKEN))
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield server, log
    finally:
        await runner.cleanup()


async def until(condition, what: str, seconds: float = 60):
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.02)


def logged(log: Path) -> list:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@needs_web
async def test_what_a_page_sends_is_bounded_and_anything_malformed_is_dropped(tmp_path, caplog):
    import aiohttp

    async with in_process(tmp_path) as (server, log), aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{server.port}/ws/{TOKEN}?width=99999999999&height=0"
        async with session.ws_connect(url, headers={"Origin": f"http://127.0.0.1:{server.port}"}) as websocket:
            for junk in ("not json", "[]", "{}", "[1, 2]", '["stdin", 5]', '["resize", "wide"]', "[" * 5000,
                         '["resize", {"width": 1e400, "height": "12"}]'):
                await websocket.send_str(junk)
            await websocket.send_bytes(b"\xff\x00")
            await websocket.send_json(["resize", {"width": 10 ** 12, "height": -3}])
            await websocket.send_json(["stdin", "typed \udcff"])
            await websocket.send_json(["ping", "still there?"])
            reply = await websocket.receive_json(timeout=60)
            assert reply == ["pong", "still there?"]
            await until(lambda: any(entry[0] == "D" for entry in logged(log)), "the keys typed reach the debugger")
    entries = logged(log)
    assert entries[0] == ["size", "1000", "1"]  # the size asked for in the address, bounded
    resized = [json.loads(payload) for kind, payload in entries[1:] if kind == "M" and "resize" in payload]
    assert resized == [{"type": "resize", "width": 80, "height": 12},  # (1e400 is no number; "12" is)
                       {"type": "resize", "width": 1000, "height": 1}]
    assert [payload for kind, payload in entries[1:] if kind == "D"] == ["typed ?"]
    assert "Traceback" not in caplog.text


@needs_web
async def test_at_most_a_few_debuggers_run_at_once(tmp_path, monkeypatch):
    import aiohttp

    from agentdbg.web import server as web_server

    monkeypatch.setattr(web_server, "MAX_PAGES", 2)
    async with in_process(tmp_path) as (server, log), aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{server.port}/ws/{TOKEN}"
        origin = {"Origin": f"http://127.0.0.1:{server.port}"}
        first = await session.ws_connect(url, headers=origin)
        second = await session.ws_connect(url, headers=origin)
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(url, headers=origin)
        assert refused.value.status == 503
        await first.close()
        await until(lambda: server.pages < 2, "the first page's debugger stopped")
        third = await session.ws_connect(url, headers=origin)
        await second.close()
        await third.close()
        await until(lambda: server.pages == 0, "every debugger stopped")


@needs_web
async def test_a_debugger_that_does_not_quit_is_killed_when_its_page_closes(tmp_path, monkeypatch):
    import aiohttp

    from agentdbg.web import server as web_server

    monkeypatch.setattr(web_server, "STOP_SECONDS", 0.5)
    started: list = []
    start = web_server.PageDebugger.start

    async def start_and_keep(service, width, height):
        await start(service, width, height)
        started.append(service._process)

    monkeypatch.setattr(web_server.PageDebugger, "start", start_and_keep)
    async with in_process(tmp_path, STUCK) as (server, _), aiohttp.ClientSession() as session:
        websocket = await session.ws_connect(f"http://127.0.0.1:{server.port}/ws/{TOKEN}",
                                             headers={"Origin": f"http://127.0.0.1:{server.port}"})
        await until(lambda: started, "the debugger started")
        await websocket.close()
        await until(lambda: server.pages == 0, "the page's debugger stopped")
    [process] = started
    assert process.returncode == -signal.SIGKILL  # killed, and waited for


# -- headless Chromium ----------------------------------------------------------------------------


async def in_browser(steps) -> list[str]:
    """Run ``steps(browser)`` in a headless Chromium that resolves no name but
    evil.example (to this machine); the addresses it asked for."""
    import aiohttp

    browser = Browser("MAP evil.example 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
    try:
        async with aiohttp.ClientSession() as session:
            await browser.open(session)
            await steps(browser)
    finally:
        browser.close()
    return browser.requests


@needs_web
@needs_chromium
async def test_the_printed_address_opens_the_debugger_in_chromium_with_no_internet(served):
    async def steps(browser: Browser) -> None:
        await browser.call("Page.navigate", url=served.url)
        await browser.wait_for("document.body && document.body.classList.contains('-first-byte')",
                               "the debugger's first bytes in the terminal")
        await browser.wait_for(f"({TERMINAL_COLOURS}) > 10", "the debugger's screen drawn")
        assert await browser.evaluate("document.fonts.check(\"16px 'Roboto Mono'\")")
        assert await browser.evaluate("[...document.fonts].some(f => f.family.includes('Roboto Mono') "
                                      "&& f.status === 'loaded')")
        assert not await browser.evaluate("document.body.classList.contains('-closed')")

    requested = await in_browser(steps)
    assert f"{served.origin}/assets/RobotoMono-VariableFont_wght.ttf" in requested
    assert [url for url in requested if not url.startswith(served.origin + "/")] == []


@needs_web
@needs_chromium
async def test_in_chromium_another_site_can_neither_load_the_page_nor_open_its_websocket(served):
    from aiohttp import web

    async def attacker_page(request):
        return web.Response(text="<p>a page of another site</p>", content_type="text/html")

    port = served.port
    attacker = web.Application()
    attacker.router.add_get("/", attacker_page)
    runner = web.AppRunner(attacker)
    await runner.setup()
    other = free_port()
    await web.TCPSite(runner, "127.0.0.1", other).start()

    async def steps(browser: Browser) -> None:
        # DNS rebinding: evil.example resolves to this machine; the page is asked for by that name.
        await browser.call("Page.navigate", url=f"http://evil.example:{port}/?token={TOKEN}")
        text = await browser.wait_for("document.body && document.body.innerText", "the refusal shown")
        assert "answers to 127.0.0.1, [::1], localhost only" in text
        # A page of another site opens the debugger's websocket (even knowing the token).
        await browser.call("Page.navigate", url=f"http://evil.example:{other}/")
        await browser.wait_for("document.body && document.body.innerText.includes('another site')", "its page")
        fate = await browser.evaluate(f"""new Promise(done => {{
            const socket = new WebSocket("ws://127.0.0.1:{port}/ws/{TOKEN}?width=80&height=24");
            socket.onopen = () => done("open");
            socket.onerror = () => done("refused");
        }})""")
        assert fate == "refused"

    try:
        await in_browser(steps)
    finally:
        await runner.cleanup()
    served.wait_for_output(f"Origin http://evil.example:{other}: a page of another site")
