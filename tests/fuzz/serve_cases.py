"""Hostile requests for ``agentdbg serve``: what a page of another site, a name pointed at
this machine (DNS rebinding), another user of the machine or a broken client could send.

Each request is written as raw bytes (every header as given, the Host header too) to a
real server started with a known token, and must be refused: an answer of 400 to 499 (or
503), or the connection closed; never a page, a file, a websocket or a 500. A refusal
never holds the token, and what the server prints holds no traceback and nothing a
terminal would act on (``classify.escapes``); afterwards it still serves its page.
``attack`` does it all and gives the failures as findings.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fuzz import classify

COMMAND = "agentdbg serve"
KEY = base64.b64encode(b"sixteen byte key").decode()
HOSTILE = "\x1b]52;c;eA==\x07\x1b[2J\u202e\x9b31m"  # OSC 52, CSI, a bidi override, a C1 CSI


@dataclass(frozen=True)
class Request:
    id: str  # serve/what=how
    build: Callable[[int, str], bytes]  # (port, token): the bytes sent


def _http(path: str, host: str | None = "", headers: tuple[str, ...] = (), method: str = "GET",
          websocket: bool = False, origin: str | None = "") -> Callable[[int, str], bytes]:
    """A request; in ``path``, ``host`` and the headers, {PORT} and {TOKEN} are the server's
    (``host`` "": its own; None: no Host header; ``origin`` "": its own, None: none)."""
    def build(port: int, token: str) -> bytes:
        def fill(text: str) -> str:
            return text.replace("{PORT}", str(port)).replace("{TOKEN}", token)

        own = f"127.0.0.1:{port}"
        lines = [f"{method} {fill(path)} HTTP/1.1"]
        if host is not None:
            lines.append(f"Host: {fill(host) if host else own}")
        if websocket:
            lines += ["Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {KEY}",
                      "Sec-WebSocket-Version: 13"]
            if origin is not None:
                lines.append(f"Origin: {fill(origin) if origin else 'http://' + own}")
        else:
            lines.append("Connection: close")
        lines += [fill(header) for header in headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogatepass")
    return build


def _raw(data: bytes) -> Callable[[int, str], bytes]:
    return lambda port, token: data.replace(b"{PORT}", str(port).encode()).replace(b"{TOKEN}", token.encode())


def cases() -> list[Request]:
    found: list[Request] = []

    def add(what: str, how: str, build: Callable[[int, str], bytes]) -> None:
        found.append(Request(f"serve/{what}={how}", build))

    # A name pointed at this machine, or an address that is not the one listened on.
    hosts = {"evil-name": "evil.example:{PORT}", "loopback-subdomain": "localhost.evil.example:{PORT}",
             "address-prefix": "127.0.0.1.evil.example:{PORT}", "trailing-dot": "localhost.:{PORT}",
             "other-port": "127.0.0.1:1", "no-port": "127.0.0.1", "unbracketed-ipv6": "::1:{PORT}",
             "userinfo": "127.0.0.1:{PORT}@evil.example", "decimal-address": "2130706433:{PORT}",
             "fullwidth-port": "127.0.0.1:\uff18\uff10", "empty": "", "spaces": "   ", "hostile": HOSTILE + ":{PORT}",
             "huge": "a" * 60_000 + ":{PORT}", "nul": "127.0.0.1\x00.evil.example:{PORT}",
             "latin1": "h\u00f4te.example:{PORT}"}
    for how, host in hosts.items():
        add("host/page", how, _http("/?token={TOKEN}", host=host or " "))
        add("host/websocket", how, _http("/ws/{TOKEN}", host=host or " ", websocket=True,
                                         origin=f"http://{host}" if host else None))
    add("host/page", "missing", _http("/?token={TOKEN}", host=None))
    add("host/page", "twice", _raw(b"GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\n"
                                   b"Host: evil.example:{PORT}\r\nConnection: close\r\n\r\n"))
    add("host/page", "http-1.0", _raw(b"GET /?token={TOKEN} HTTP/1.0\r\n\r\n"))
    add("host/static", "evil-name", _http("/static/js/textual.js", host="evil.example:{PORT}"))

    # The token: absent, wrong, almost right, hidden elsewhere.
    tokens = {"none": "/", "empty": "/?token=", "upper": "/?token={UPPER}", "prefix": "/?token={PREFIX}",
              "suffix": "/?token={TOKEN}x", "space": "/?token=%20{TOKEN}", "nul": "/?token={TOKEN}%00",
              "first-of-two-wrong": "/?token=wrong&token={TOKEN}", "other-name": "/?tok={TOKEN}",
              "fragment": "/#token={TOKEN}", "path": "/{TOKEN}", "huge": "/?token=" + "A" * 60_000,
              "not-utf8": "/?token=%FF%FE", "surrogate": "/?token=%ED%A0%80", "hostile": "/?token=%1B%5B2J%E2%80%AE",
              "unicode": "/?token=%C3%A9%C3%A9%C3%A9"}
    for how, path in tokens.items():
        add("token/page", how, lambda port, token, path=path: _http(
            path.replace("{UPPER}", token.upper()).replace("{PREFIX}", token[:-1]))(port, token))
    add("token/page", "as-cookie", _http("/", headers=("Cookie: token={TOKEN}",)))
    add("token/page", "as-authorization", _http("/", headers=("Authorization: Bearer {TOKEN}",)))
    for how, path in {"none": "/ws/", "bare": "/ws", "wrong": "/ws/wrong", "prefix": "/ws/{PREFIX}",
                      "suffix": "/ws/{TOKEN}x", "slash": "/ws/{TOKEN}/", "encoded-slash": "/ws/%2F{TOKEN}",
                      "query-wrong": "/ws/x?token=wrong"}.items():
        add("token/websocket", how, lambda port, token, path=path: _http(
            path.replace("{PREFIX}", token[:-1]), websocket=True)(port, token))
    add("token/download", "none", _http("/download/anything"))

    # A page of another site opening the websocket (with the token: the Origin alone refuses it).
    origins = {"evil-site": "http://evil.example", "evil-same-port": "http://evil.example:{PORT}", "null": "null",
               "other-port": "http://127.0.0.1:1", "other-loopback-name": "http://localhost:{PORT}",
               "suffix": "http://127.0.0.1:{PORT}.evil.example", "trailing-slash": "http://127.0.0.1:{PORT}/",
               "file": "file://", "hostile": HOSTILE, "huge": "http://" + "a" * 60_000, "empty": " "}
    for how, origin in origins.items():
        add("origin/websocket", how, _http("/ws/{TOKEN}", websocket=True, origin=origin))
    add("origin/websocket", "missing", _http("/ws/{TOKEN}", websocket=True, origin=None))
    add("origin/websocket", "twice", _http("/ws/{TOKEN}", websocket=True,
                                           headers=("Origin: http://evil.example",)))

    # Routes and files beside the page.
    for how, path in {"index": "/static/", "folder": "/static/js/", "parent": "/static/../server.py",
                      "encoded-parent": "/static/%2e%2e/server.py", "double-encoded": "/static/%252e%252e/server.py",
                      "assets-parent": "/assets/..%2fguard.py", "absolute": "/static//etc/passwd",
                      "nul": "/static/js/textual.js%00.png", "backslash": "/static/..\\server.py",
                      "huge": "/static/" + "a/" * 20_000, "hostile": "/%1B%5D52;c;eA==%07"}.items():
        add("path", how, _http(path))
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT", "BREW"):
        add("method", method.lower(), _http("/?token={TOKEN}", method=method))

    # Broken HTTP.
    add("http", "garbage", _raw(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(256))))
    add("http", "http-0.9", _raw(b"GET /?token={TOKEN}\r\n\r\n"))
    add("http", "hostile-method", _raw(b"G\x1b[2JET / HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\n\r\n"))
    add("http", "hostile-header", _http("/", headers=(f"X-Note: {HOSTILE}",)))
    add("http", "header-100k", _http("/", headers=("X-Big: " + "a" * 100_000,)))
    add("http", "headers-1000", _http("/", headers=tuple(f"X-{n}: {n}" for n in range(1000))))
    add("http", "smuggling", _http("/?token={TOKEN}", method="POST",
                                   headers=("Content-Length: 4", "Transfer-Encoding: chunked")))
    add("http", "body-too-big", _http("/?token={TOKEN}", method="POST", headers=("Content-Length: 10000000",)))
    add("http", "bad-websocket-version", _raw(
        b"GET /ws/{TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: " + KEY.encode() + b"\r\nSec-WebSocket-Version: 99\r\nOrigin: http://127.0.0.1:{PORT}\r\n\r\n"))
    return found


REFUSED = (*range(400, 500), 503)


def run(port: int, token: str, requests: list[Request], send) -> list[tuple[str, classify.Finding]]:
    """Send each request with ``send(port, bytes) -> (status or None, body)``; (its id, a
    finding) for each that was not refused, or whose refusal holds the token."""
    findings = []
    for request in requests:
        sent = request.build(port, token)
        try:
            status, body = send(port, sent)
        except OSError as exc:  # (a connection reset is a refusal too)
            status, body = None, f"{type(exc).__name__}".encode()
        if status is not None and status not in REFUSED:
            findings.append((request.id, classify.Finding("other", COMMAND, f"{request.id}: answered {status}",
                                                          f"other|serve|{status}")))
        elif token.encode() in body and token.encode() not in sent:  # (a client's own words may come back)
            findings.append((request.id, classify.Finding("other", COMMAND, f"{request.id}: the refusal holds "
                                                          "the token", "other|serve|token")))
    return findings


def server_findings(output: str) -> list[tuple[str, classify.Finding]]:
    """What the server printed while refusing: no traceback, nothing unsafe."""
    findings = []
    if "Traceback (most recent call last)" in output:
        exception, where = classify.traceback_summary(output)
        findings.append(classify.Finding("traceback", COMMAND, f"{exception} ({where})", f"traceback|serve|{where}"))
    return [("serve/output", finding) for finding in findings + classify.escapes(output, "stderr", COMMAND)]


def attack(folder: Path, requests: list[Request]) -> list[tuple[str, classify.Finding]]:
    """Start ``agentdbg serve`` in ``folder``, send it ``requests``, then check it still
    serves its page and what it printed; every failure, with the id of its request."""
    from serve_support import TOKEN, get, raw_request, serving

    with serving("--token", TOKEN, cwd=folder) as server:
        found = run(server.port, server.token, requests, raw_request)
        status, _ = get(server.port, f"/?token={TOKEN}")
        if status != 200:
            found.append(("serve/page", classify.Finding("other", COMMAND, f"the page after the attacks: {status}",
                                                         "other|serve|page-lost")))
    return found + server_findings(server.output())
