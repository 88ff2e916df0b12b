"""Helpers for the tests of ``agentdbg serve`` (no tests here): a real server in a child
process, raw HTTP requests (every header as written, Host included), a websocket
client that reads what the debugger draws, and headless Chromium driven over the
DevTools protocol."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

START_SECONDS = 120  # a loaded machine may take long to import agentdbg and textual-serve
TOKEN = "fixed-test-token-0123456789"
WEBSOCKET_KEY = base64.b64encode(b"sixteen byte key").decode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    """A running ``agentdbg serve``: its address as printed, and what it wrote."""

    process: subprocess.Popen
    port: int
    url: str  # the address printed, token included
    token: str
    lines: list[str] = field(default_factory=list)  # stdout and stderr, as they came

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_output(self, text: str, seconds: float = START_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.output():
            if time.monotonic() > deadline:
                raise AssertionError(f"agentdbg serve never said {text!r}:\n{self.output()}")
            time.sleep(0.05)


def _pump(stream, into: queue.Queue, name: str) -> None:
    for raw in iter(stream.readline, b""):
        into.put((name, raw.decode("utf-8", "replace").rstrip("\n")))
    into.put((name, None))


@contextmanager
def serving(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``agentdbg serve ARGS --port FREE`` until the block ends; yields once it printed
    its address (it listens then)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "agentdbg", "serve", *args, "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               cwd=cwd, env={**os.environ, **(env or {})})
    lines: queue.Queue = queue.Queue()
    pumps = [threading.Thread(target=_pump, args=(stream, lines, name), daemon=True)
             for stream, name in ((process.stdout, "out"), (process.stderr, "err"))]
    for pump in pumps:
        pump.start()
    served = Served(process, port, "", "")
    ended = 0  # streams at their end
    try:
        deadline = time.monotonic() + START_SECONDS
        while not served.url:
            try:
                _, line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"agentdbg serve printed no address:\n{served.output()}") from None
            if line is None:
                ended += 1
                if ended == 2:
                    raise AssertionError(f"agentdbg serve exited {process.wait()}:\n{served.output()}")
                continue
            served.lines.append(line)
            found = re.search(r"the debugger is at (http://\S+)", line)
            if found:
                served.url = found.group(1)
                served.token = served.url.split("?token=", 1)[1]
        collector = threading.Thread(target=_collect, args=(lines, served, 2 - ended), daemon=True)
        collector.start()
        yield served
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
    collector.join(30)  # every line it wrote is in served.lines


def _collect(lines: queue.Queue, served: Served, streams: int) -> None:
    while streams:
        _, line = lines.get()
        if line is None:
            streams -= 1
        else:
            served.lines.append(line)


def raw_request(port: int, data: bytes, timeout: float = 60) -> tuple[int | None, bytes]:
    """Send ``data`` as it is; the status of the answer (None: no HTTP answer) and its body.
    The connection is closed once the head (and the body it announces) came."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        found = re.match(rb"HTTP/\d\.\d (\d{3})", head)
        length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.IGNORECASE)
        if found and length:
            while len(body) < int(length.group(1)):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                body += chunk
        return (int(found.group(1)) if found else None), body


def get(port: int, path: str, host: str | None = "default", headers: dict[str, str] | None = None,
        websocket: bool = False) -> tuple[int | None, bytes]:
    """A GET of ``path`` (``host``: the Host header, None for none); ``websocket``: as a
    websocket's opening handshake."""
    lines = [f"GET {path} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {f'127.0.0.1:{port}' if host == 'default' else host}")
    if websocket:
        lines += ["Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {WEBSOCKET_KEY}",
                  "Sec-WebSocket-Version: 13"]
    else:
        lines.append("Connection: close")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return raw_request(port, ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape"))


async def drive(served: Served, keys: list[str], until: list[str], seconds: float = START_SECONDS) -> str:
    """Open the debugger's websocket as the page does, wait for its first screen, type
    each of ``keys`` (one message each), waiting for the next of ``until`` to be drawn after
    it; what it drew last."""
    import aiohttp

    drawn = b""
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"http://127.0.0.1:{served.port}/ws/{served.token}?width=120&height=40",
                                      headers={"Origin": served.origin}) as websocket:

            async def wait_for(text: str) -> None:
                nonlocal drawn
                async for message in websocket:
                    if message.type == aiohttp.WSMsgType.BINARY:
                        drawn += message.data
                        if text in shown(drawn):
                            return
                raise AssertionError(f"the websocket closed before {text!r} was drawn")

            for key, text in zip([None, *keys], until, strict=True):
                if key is not None:
                    drawn = b""
                    await websocket.send_json(["stdin", key])
                try:
                    await asyncio.wait_for(wait_for(text), seconds)
                except TimeoutError:
                    raise AssertionError(f"after {key!r}, {text!r} was never drawn; drawn:\n"
                                         f"{shown(drawn)[-3000:]}") from None
    return shown(drawn)


def shown(drawn: bytes) -> str:
    """What a terminal shows of ``drawn``, roughly: its text without the escape sequences
    that colour it and move the cursor (a line may be drawn in several pieces)."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode("utf-8", "replace"))


# -- headless Chromium ----------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


class Browser:
    """A headless Chromium with one tab, driven over the DevTools protocol: ``evaluate``
    runs JavaScript in the page, ``requests`` lists every address it asked for."""

    def __init__(self, resolver_rules: str):
        self.profile = tempfile.mkdtemp(prefix="agentdbg-chromium-")
        # No name resolves but those mapped (no internet, whatever the machine has).
        self.process = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--host-resolver-rules={resolver_rules}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.requests: list[str] = []
        self._next = 0

    def endpoint(self) -> str:
        """The browser's DevTools address, as it printed it (blocks until then)."""
        for raw in iter(self.process.stderr.readline, b""):
            found = re.search(rb"DevTools listening on (ws://\S+)", raw)
            if found:
                threading.Thread(target=lambda: self.process.stderr.read(), daemon=True).start()  # (never blocks it)
                return found.group(1).decode()
        raise AssertionError(f"chromium exited {self.process.wait()} without a DevTools address")

    async def open(self, session) -> None:
        endpoint = await asyncio.get_running_loop().run_in_executor(None, self.endpoint)
        port = endpoint.split("//", 1)[1].split("/", 1)[0]
        async with session.get(f"http://{port}/json/list") as reply:
            targets = await reply.json()
        [page] = [target for target in targets if target["type"] == "page"]
        self.websocket = await session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.call("Network.enable")
        await self.call("Page.enable")

    async def call(self, method: str, **params) -> dict:
        self._next += 1
        number = self._next
        await self.websocket.send_json({"id": number, "method": method, "params": params})
        async for message in self.websocket:
            data = json.loads(message.data)
            if data.get("method") == "Network.requestWillBeSent":
                self.requests.append(data["params"]["request"]["url"])
            if data.get("id") == number:
                if "error" in data:
                    raise AssertionError(f"{method}: {data['error']}")
                return data["result"]
        raise AssertionError(f"chromium closed the DevTools connection during {method}")

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")

    async def wait_for(self, expression: str, what: str, seconds: float = START_SECONDS):
        """Evaluate ``expression`` until it is true; its value."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.2)
        raise AssertionError(f"never happened in the page: {what}")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        shutil.rmtree(self.profile, ignore_errors=True)


# Distinct colours painted on the terminal's text layer: the debugger's screen has dozens
# (text, its antialiasing, borders, highlights), a blank terminal one.
TERMINAL_COLOURS = """(() => {
  const canvas = document.querySelector('.xterm-text-layer');
  const context = canvas && canvas.getContext('2d');
  if (!context) return 0;
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  const colours = new Set();
  for (let i = 0; i < data.length; i += 4) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  return colours.size;
})()"""
