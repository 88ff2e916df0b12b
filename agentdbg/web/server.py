"""textual-serve's server with agentdbg's guard in front of every route.

Each page that opens its websocket starts a debugger process (the command given) and
talks to it; before anything is served, ``agentdbg.web.guard`` checks the Host header,
then the token (every route but the page's static files, which are the packages' own),
then a websocket's Origin. What a client sends on the websocket is read defensively:
anything malformed is dropped, sizes are bounded, at most ``MAX_PAGES`` debuggers run at
once, and a debugger that does not quit when its page closes (or the server stops) is
killed. The page is agentdbg's own (``page.html``): its title escaped, its font served
from here (it needs no internet), and no Referer leaves it (its address holds the token).
Needs the optional extra ``agentdbg[web]`` (textual-serve, aiohttp).
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import shlex
import signal
import sys
from pathlib import Path
from string import Template
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.web_runner import GracefulExit
from textual_serve.app_service import AppService
from textual_serve.server import Server

from agentdbg.text import one_line
from agentdbg.web.guard import Guard

HERE = Path(__file__).resolve().parent
ASSETS = HERE / "static"  # agentdbg's: the page's style and font
PAGE = Template((HERE / "page.html").read_text(encoding="utf-8"))
PUBLIC = ("static", "assets")  # routes served without the token: files of the packages, nothing of the user's
MAX_PAGES = 8  # debuggers running at once (one per page open)
MAX_COLUMNS, MAX_ROWS = 1000, 500  # a terminal size asked for is kept to these
MAX_MESSAGE = 1 << 20  # bytes in one websocket message (keys typed, a paste)
STOP_SECONDS = 10.0  # a page's debugger asked to quit has this long, then it is killed
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}

log = logging.getLogger("agentdbg.serve")


def bounded(value: Any, default: int, top: int) -> int:
    """``value`` as a number from 1 to ``top`` (``default`` when it is no number)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return min(max(number, 1), top)


class OneLine(logging.Formatter):
    """Log records as one safe line each: what a client sent never reaches the terminal
    raw, and an exception is named without its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f" ({type(error).__name__}: {error})"
        return f"agentdbg serve: {one_line(text, 500)}"


class PageDebugger(AppService):
    """textual-serve's process for one page, started without a shell and in a session of
    its own: it and whatever it started (a plan's tools) can be killed together."""

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *shlex.split(self.command), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
            start_new_session=True)
        self._stdin = process.stdin
        return process


class GuardedServer(Server):
    """Serves ``command`` to pages that pass ``guard``."""

    def __init__(self, command: str, *, host: str, port: int, title: str, guard: Guard):
        super().__init__(command, host=host, port=port, title=title)
        self.guard = guard
        self.pages = 0  # debuggers running
        self.websockets: set[web.WebSocketResponse] = set()  # the pages', closed when the server stops

    def initialize_logging(self) -> None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLine())
        logging.basicConfig(level=logging.DEBUG if self.debug else logging.WARNING, handlers=[handler], force=True)
        log.setLevel(logging.INFO)

    def serve(self, debug: bool = False) -> None:
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for number in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(number, self.request_exit)
            except (NotImplementedError, RuntimeError):  # (not the main thread, or Windows)
                pass
        # (run_app calls print once it listens: the address is printed when it can be opened)
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                    print=lambda _: self.announce(), access_log=None)

    def announce(self) -> None:
        print(f"agentdbg serve: the debugger is at {self.guard.page_url(self.host)}", flush=True)
        print("agentdbg serve: anyone with this address (its token) sees the run and drives the debugger; "
              "Ctrl+C stops", flush=True)

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._checked], client_max_size=64 * 1024)
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws/{token}", self.handle_websocket, name="websocket"),
            web.static("/static", self.statics_path, name="static"),
            web.static("/assets", ASSETS, name="assets"),
        ])
        app.on_shutdown.append(self._close_pages)
        return app

    async def _close_pages(self, app: web.Application) -> None:
        """The server stops (Ctrl+C): each page is told, and its debugger quits."""
        for websocket in list(self.websockets):
            await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"agentdbg serve stopped")

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is not served, in words; None when it passes the guard."""
        hosts = request.headers.getall("Host", [])
        if len(hosts) > 1:
            return "several Host headers"
        host = hosts[0] if hosts else None
        refused = self.guard.host_refusal(host)
        if refused is not None or host is None:
            return refused
        resource = getattr(request.match_info.route, "resource", None)
        name = getattr(resource, "name", None)
        if name in PUBLIC:
            return None
        refused = self.guard.token_refusal(request.query.get("token"), request.match_info.get("token"))
        if refused is not None:
            return refused
        if name == "websocket":
            origins = request.headers.getall("Origin", [])
            if len(origins) > 1:
                return "several Origin headers"
            return self.guard.origin_refusal(origins[0] if origins else None, host)
        return None

    @web.middleware
    async def _checked(self, request: web.Request, handler) -> web.StreamResponse:
        refused = self.refusal(request)
        if refused is not None:
            path = "/ws/…" if request.path.startswith("/ws/") else request.path  # (a token, maybe the right one)
            log.warning("refused %s %s: %s", one_line(request.method, 20), one_line(path, 100), refused)
            return web.Response(status=403, text=f"agentdbg serve refused this request: {refused}\n",
                                headers=HEADERS)
        response = await handler(request)
        if not isinstance(response, web.WebSocketResponse):
            response.headers.update(HEADERS)
        return response

    async def handle_index(self, request: web.Request) -> web.Response:
        host = request.headers["Host"]  # checked: a name and a port
        page = PAGE.substitute(
            title=html.escape(self.title),
            websocket=html.escape(f"ws://{host}/ws/{self.guard.token}"),
            font_size=bounded(request.query.get("fontsize"), 16, 64),
        )
        return web.Response(text=page, content_type="text/html")

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if self.pages >= MAX_PAGES:
            return web.Response(status=503, text=f"{MAX_PAGES} debugger pages are open already: close one\n")
        width = bounded(request.query.get("width"), 80, MAX_COLUMNS)
        height = bounded(request.query.get("height"), 24, MAX_ROWS)
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        if not websocket.can_prepare(request).ok:
            return web.Response(status=400, text="not a websocket handshake (version 13)\n")
        self.pages += 1
        service: PageDebugger | None = None
        try:
            await websocket.prepare(request)
            self.websockets.add(websocket)
            service = PageDebugger(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                   close=websocket.close, download_manager=self.download_manager,
                                   debug=self.debug)
            await service.start(width, height)
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # (a debugger that could not start, a connection gone)
            log.warning("a debugger page ended: %s: %s", type(error).__name__, error)
        finally:
            self.websockets.discard(websocket)
            if service is not None:
                await self._stop(service)
            self.pages -= 1
        return websocket

    async def _stop(self, service: PageDebugger) -> None:
        """Ask the page's debugger to quit; kill it (and what it started) if it has not
        within STOP_SECONDS (a tool that hangs): no process outlives its page."""
        process = service._process
        try:
            await asyncio.wait_for(service.stop(), STOP_SECONDS)
            if process is not None:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
        except TimeoutError:
            if process is not None and process.returncode is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                await process.wait()

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: PageDebugger) -> None:
        """Keys, sizes and pings from the page, to its debugger; anything else is dropped."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except (ValueError, RecursionError):  # (not JSON, or nested too deep to read)
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(bounded(data.get("width"), 80, MAX_COLUMNS),
                                                    bounded(data.get("height"), 24, MAX_ROWS))
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    def request_exit(self) -> None:
        raise GracefulExit()
