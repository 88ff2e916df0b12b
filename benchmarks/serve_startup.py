"""How long ``agentdbg serve`` takes to show the debugger in a browser.

Starts ``agentdbg serve`` on a free loopback port and measures, each several times:

* page: from starting the server to its page answering (HTTP 200);
* first frame: from a websocket connecting (what the page does) to the first screen
  bytes the debugger process sends (each page starts its own debugger);
* baseline, in the same run: a Python process importing the debugger's app module and
  exiting, the floor any start of the debugger pays.

With ``--screenshot PATH`` and a Chromium on the PATH (``apt install chromium``), it also
drives headless Chromium over its DevTools protocol: opens the page, waits for the
timeline to be drawn, presses ``c`` (continue to the first break) and saves a PNG,
reporting the time from navigation to the debugger's first screen bytes reaching the
page in a real browser.

    python benchmarks/serve_startup.py [--repeat 3] [--screenshot docs/web.png]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "benchmark-token-0123456789"  # the page and its websocket need it (chosen: known here)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, file: str | None) -> tuple[subprocess.Popen, float]:
    argv = [sys.executable, "-m", "agentdbg", "serve", "--port", str(port), "--token", TOKEN] + ([file] if file else [])
    started = time.perf_counter()
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = started + 30
    while time.perf_counter() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={TOKEN}", timeout=1) as reply:
                if reply.status == 200:
                    return server, time.perf_counter() - started
        except OSError:
            time.sleep(0.02)
    server.kill()
    raise SystemExit("the server did not answer within 30 s")


async def first_frame(port: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        started = time.perf_counter()
        async with session.ws_connect(f"ws://127.0.0.1:{port}/ws/{TOKEN}?width=120&height=40",
                                      headers={"Origin": f"http://127.0.0.1:{port}"}) as ws:
            await ws.send_json(["resize", {"width": 120, "height": 40}])
            seen = b""
            async for message in ws:
                if message.type == aiohttp.WSMsgType.BINARY:
                    seen += message.data
                elif message.type == aiohttp.WSMsgType.TEXT:
                    seen += message.data.encode()
                if b"Timeline" in seen:
                    return time.perf_counter() - started
    raise SystemExit("the debugger closed before drawing")


def import_baseline() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import agentdbg.tui.app"], check=True)
    return time.perf_counter() - started


async def browser_screenshot(port: int, path: Path) -> float:
    """Drive headless Chromium: open the page, wait for the debugger, press c, save a PNG.
    Returns the seconds from navigation to the timeline being drawn."""
    import aiohttp

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        raise SystemExit("no chromium on the PATH: --screenshot needs one (apt install chromium)")
    debug_port = free_port()
    profile = tempfile.mkdtemp(prefix="agentdbg-chromium-")
    browser = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                f"--remote-debugging-port={debug_port}", f"--user-data-dir={profile}",
                                "--window-size=1280,800", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(200):
                try:
                    async with session.get(f"http://127.0.0.1:{debug_port}/json") as reply:
                        pages = [t for t in await reply.json() if t.get("type") == "page"]
                        if pages:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            async with session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                ids = iter(range(1, 10_000))

                async def call(method: str, **params):
                    number = next(ids)
                    await ws.send_json({"id": number, "method": method, "params": params})
                    async for message in ws:
                        data = json.loads(message.data)
                        if data.get("id") == number:
                            return data.get("result", {})

                async def first_byte() -> bool:
                    # The page marks its body when the debugger's first screen bytes arrive
                    # (the terminal is drawn on a canvas: its text is not in the DOM).
                    result = await call("Runtime.evaluate", returnByValue=True,
                                        expression="document.body.classList.contains('-first-byte')")
                    return bool(result.get("result", {}).get("value"))

                started = time.perf_counter()
                await call("Page.navigate", url=f"http://127.0.0.1:{port}/?token={TOKEN}&fontsize=14")
                while not await first_byte():
                    if time.perf_counter() - started > 30:
                        raise SystemExit("the debugger was not drawn in the browser within 30 s")
                    await asyncio.sleep(0.02)
                drawn = time.perf_counter() - started
                await asyncio.sleep(2.0)  # the whole first screen painted
                await call("Runtime.evaluate", expression="document.querySelector('.xterm-helper-textarea').focus()")
                await call("Input.dispatchKeyEvent", type="keyDown", text="c", key="c", code="KeyC",
                           windowsVirtualKeyCode=67)
                await call("Input.dispatchKeyEvent", type="keyUp", key="c")
                await asyncio.sleep(1.5)  # continued to the first break, painted
                shot = await call("Page.captureScreenshot", format="png")
                path.write_bytes(base64.b64decode(shot["data"]))
                return drawn
    finally:
        browser.kill()
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="what to serve (default: the bundled demo)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--screenshot", type=Path, help="save a headless-Chromium screenshot here")
    args = parser.parse_args()

    pages, frames, baselines = [], [], []
    browser = None
    for _ in range(args.repeat):
        baselines.append(import_baseline())
        port = free_port()
        server, page = start_server(port, args.file)
        try:
            pages.append(page)
            frames.append(asyncio.run(first_frame(port)))
            if args.screenshot is not None and browser is None:
                browser = asyncio.run(browser_screenshot(port, args.screenshot))
        finally:
            server.terminate()
            server.wait(10)

    base = statistics.median(baselines)
    print(f"runs: {args.repeat} (median shown)")
    print(f"baseline: import the debugger in a new Python   {base * 1000:7.0f} ms   1.00x")
    for label, values in (("server started to page served", pages),
                          ("websocket opened to first frame", frames)):
        value = statistics.median(values)
        print(f"{label:<46} {value * 1000:7.0f} ms   {value / base:.2f}x")
    if browser is not None:
        print(f"{'headless Chromium: navigation to first frame':<46} {browser * 1000:7.0f} ms   "
              f"{browser / base:.2f}x")
        print(f"screenshot: {args.screenshot}")


if __name__ == "__main__":
    main()
