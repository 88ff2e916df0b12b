"""A model server on the loopback interface for tests: it replays scripted replies in the
real JSON shapes of OpenAI's chat completions and Anthropic's Messages, and records every
request it got. Nothing here reaches the internet."""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. ``body``: a dict (sent as JSON), text or bytes (sent as they are).
    ``delay`` seconds before answering; ``hang_up``: close the connection without answering."""

    body: Any = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    hang_up: bool = False


@dataclass
class Request:
    path: str
    headers: dict  # names lower-cased
    body: Any  # the decoded JSON (or the raw bytes when it is not JSON)


class ModelServer:
    def __init__(self, *replies: Reply):
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                with server.lock:
                    server.requests.append(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    reply = server.replies.popleft() if server.replies else Reply(
                        {"error": {"message": "the test scripted no more replies"}}, status=500)
                if reply.delay:
                    server.stopping.wait(reply.delay)
                if reply.hang_up:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                data = reply.body if isinstance(reply.body, bytes) else reply.body.encode() \
                    if isinstance(reply.body, str) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def add(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    """A loopback port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- replies in each API's shape ------------------------------------------------------------------


def openai_text(text: str | None, prompt_tokens: int = 100, completion_tokens: int = 10,
                finish: str = "stop", usage: bool = True) -> Reply:
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                     "logprobs": None, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
    return Reply(body)


def openai_tool_call(name: str, arguments: str, content: str | None = None, count: int = 1,
                     prompt_tokens: int = 100, completion_tokens: int = 10) -> Reply:
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
             for i in range(count)]
    return Reply({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "tool_calls": calls},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


def openai_error(status: int, message: str, kind: str = "server_error", headers: dict | None = None) -> Reply:
    return Reply({"error": {"message": message, "type": kind, "param": None, "code": None}},
                 status=status, headers=headers or {})


def anthropic_text(text: str, input_tokens: int = 100, output_tokens: int = 10,
                   stop_reason: str = "stop_sequence", cache_read: int = 0) -> Reply:
    return Reply({
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason, "stop_sequence": "\nObservation:" if stop_reason == "stop_sequence" else None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": cache_read},
    })


def anthropic_tool_use(name: str, arguments: dict, text: str = "", input_tokens: int = 100,
                       output_tokens: int = 10) -> Reply:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": "toolu_test", "name": name, "input": arguments})
    return Reply({
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    })


def anthropic_error(status: int, message: str, kind: str = "overloaded_error") -> Reply:
    return Reply({"type": "error", "error": {"type": kind, "message": message}}, status=status)
