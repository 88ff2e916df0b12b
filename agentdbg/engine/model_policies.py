"""Policies that ask a real model: any OpenAI-compatible chat-completions server (OpenAI,
Ollama, vLLM, llama.cpp, LM Studio) or Anthropic's Messages API, over the standard
library's HTTP client, so the engine gains no dependency.

Every call sends a system prompt that documents the run's tools and the action format,
and the prompt the loop built (the transcript so far, or the memory's context) as the one
user message. The reply's text is the policy's output, read by the format's parser like any
scripted output: a malformed reply is a parse error the model sees and can recover from.

Whatever goes wrong with the call itself (an HTTP error, a timeout, a refused connection,
a reply that is not JSON or holds no text) raises ``ModelCallError``; the loop records it as
an ``error`` event of kind ``policy`` and ends the run. 429 and 5xx answers are retried
with exponential backoff, a bounded number of times, each retry a note in the trace.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from agentdbg.engine.model_http import (
    ModelCallError,
    address,
    check_base_url,
    check_env_name,
    error_message,
    key_over_plain_http,
    post,
    retry_after,
    snippet,
)
from agentdbg.engine.model_prompt import json_schema, system_prompt
from agentdbg.engine.policies import Policy

__all__ = ["AnthropicPolicy", "ModelCallError", "ModelPolicy", "OpenAIChatPolicy", "MODEL_POLICIES"]

MAX_MODEL_TIMEOUT = 300.0  # seconds one request may take, like a tool's limit
MAX_RETRIES = 10
MAX_BACKOFF = 60.0  # the longest wait before a retry, whatever Retry-After asks
TEXT_FORMATS = ("bracket", "colon", "json")
TOOL_CALLING = ("text", "native")
RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
STOP = "\nObservation:"  # a ReAct model must not write the observation itself
_OBSERVATION_LINE = re.compile(r"^[ \t]*Observation[ \t]*:", re.M)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None



def _obj(value: Any) -> dict[str, Any]:
    """A JSON object from a reply, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

class ModelPolicy(Policy):
    """What both APIs share: settings, the system prompt, retries, errors and notes.

    ``api_key`` is the key itself (Python callers); ``api_key_env`` names the environment
    variable that holds it (plans), read when the policy is made. The key is sent only in
    the request's header, is never part of a description, a note or an error, and is refused
    over plain http to a host that is not loopback (``allow_plain_http_key`` allows it)."""

    kind = "model"
    reports_usage = True
    api = ""
    default_base_url = ""
    path = ""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str | None = None, format: str | None = None, tool_calling: str = "text",
                 temperature: float | None = None, max_tokens: int = 1024, timeout: float = 60.0,
                 retries: int = 2, backoff: float = 1.0, instructions: str = "",
                 tools: Sequence[dict[str, Any]] | None = None, allow_plain_http_key: bool = False):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must name the model to call")
        if tool_calling not in TOOL_CALLING:
            raise ValueError(f"tool_calling must be text or native, got {tool_calling!r}")
        if tool_calling == "native":
            if format not in (None, "json"):
                raise ValueError("native tool calls are read in the json format; leave format out")
            format = "json"
        elif format is None:
            format = "bracket"
        elif format not in TEXT_FORMATS:
            raise ValueError(f"format must be bracket, colon or json, got {format!r}")
        _check_number("timeout", timeout, 0, MAX_MODEL_TIMEOUT, above=True)
        _check_number("backoff", backoff, 0, MAX_BACKOFF)
        if temperature is not None:
            _check_number("temperature", temperature, 0, 2)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
            raise ValueError(f"retries must be a whole number from 0 to {MAX_RETRIES}, got {retries!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a whole number of at least 1, got {max_tokens!r}")
        self.base_url = (base_url or self.default_base_url).strip().rstrip("/")
        check_base_url(self.base_url)
        self.url = self.base_url + self.path
        self.api_key_env = check_env_name(api_key_env) if api_key_env is not None else None
        api_key = api_key or None
        if api_key is None and self.api_key_env is not None:
            api_key = os.environ.get(self.api_key_env) or None
            if api_key is None:
                raise ValueError(f"the API key is read from ${self.api_key_env}, which is not set")
        if api_key is not None and key_over_plain_http(self.url) and not allow_plain_http_key:
            host = urllib.parse.urlsplit(self.url).hostname
            raise ValueError(f"refusing to send an API key over plain http to {host}, which is not this machine: "
                             "use https, or a loopback address (an SSH tunnel to the server, for instance)")
        self._key = api_key
        self.model = model.strip()
        self.format = format
        self.tool_calling = tool_calling
        self.temperature = None if temperature is None else float(temperature)
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = float(backoff)
        self.instructions = instructions
        self.tools: list[dict[str, Any]] = [dict(spec) for spec in tools] if tools is not None else []
        self._tokens: int | None = None
        self._calls = 0
        self._cancelled = threading.Event()
        self._wake = threading.Event()
        self.sleep: Callable[[float], bool] = self._sleep  # replaceable in tests; True when cancelled

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    # -- Policy -----------------------------------------------------------------------------
    def bind_tools(self, specs: Sequence[dict[str, Any]]) -> None:
        self.tools = [dict(spec) for spec in specs]

    def reset(self) -> None:
        self._calls = 0
        self._tokens = None
        self._cancelled.clear()

    def reported_tokens(self) -> int | None:
        return self._tokens

    def cancel(self) -> None:
        """Abandon a call in flight (and any wait before a retry): ``respond`` raises at once."""
        self._cancelled.set()
        self._wake.set()

    def describe(self) -> str:
        key = f", key from ${self.api_key_env}" if self.api_key_env else ""
        calling = ", native tool calls" if self.tool_calling == "native" else ""
        return f"{self.api}: model {self.model} at {self.base_url} ({self.format} format{calling}{key})"

    @property
    def system(self) -> str:
        return system_prompt(self.tools, self.format, self.tool_calling, self.instructions)

    def respond(self, prompt: str) -> str:
        self._tokens = None
        if self._cancelled.is_set():
            raise ModelCallError("cancelled")
        system = self.system
        if self._calls == 0:
            self.note(f"system prompt sent with every call: {len(system):,} characters, "
                      f"{len(self.tools)} tools, {self.format} format", {"system": system, "url": self.url})
        self._calls += 1
        payload = json.dumps(self.request_body(system, prompt)).encode("ascii")  # escapes even lone surrogates
        data = self._exchange(payload)
        text, tool_call, tokens, finish = self.read_reply(data)
        self._tokens = tokens
        return self._output(text, tool_call, finish)

    # -- what each API says differently ------------------------------------------------------
    def headers(self, key: str | None) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def request_body(self, system: str, prompt: str) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def read_reply(self, data: dict[str, Any]) -> tuple[str, tuple[str, Any, int] | None, int | None, str]:
        """(text, first tool call as (name, arguments, how many calls), tokens, finish reason)."""
        raise NotImplementedError  # pragma: no cover - abstract

    # -- the call -----------------------------------------------------------------------------
    def note(self, text: str, data: dict[str, Any] | None = None) -> None:
        """A note in the trace (the loop records it as a raw event of the step)."""
        listener = self.on_note
        if listener is not None:
            listener(self._scrub(text), data or {})

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key and len(self._key) >= 4 else text

    def _sleep(self, seconds: float) -> bool:
        wake = self._wake = threading.Event()  # one per wait: cancel() sets the current one
        if not self._cancelled.is_set():
            wake.wait(seconds)
        return self._cancelled.is_set()

    def _exchange(self, payload: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "agentdbg", **self.headers(self._key)}
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            status, reason, reply_headers, body = self._post_once(headers, payload)
            if 200 <= status < 300:
                try:
                    data = json.loads(body)
                except (ValueError, RecursionError) as exc:
                    raise ModelCallError(f"the reply from {address(self.url)} is not JSON "
                                         f"({type(exc).__name__}): {self._scrub(snippet(body)) or '(empty)'}") from None
                if not isinstance(data, dict):
                    raise ModelCallError(f"the reply from {address(self.url)} is JSON but not an object: {snippet(body)}")
                return data
            message = self._scrub(error_message(body)) if body else ""
            if 300 <= status < 400:
                target = next((v for k, v in reply_headers.items() if k.lower() == "location"), "")
                raise ModelCallError(f"HTTP {status} {reason} from {address(self.url)}: a redirect to {snippet(target, 120) or '?'}, "
                                     "not followed (the key could go with it); set base_url to the final address")
            said = f"HTTP {status}{' ' + reason if reason else ''} from {address(self.url)}"
            if status in RETRY_STATUSES and attempt < attempts:
                asked = retry_after(reply_headers)
                wait = min(MAX_BACKOFF, asked if asked is not None else self.backoff * 2 ** (attempt - 1))
                self.note(f"{said}; retry {attempt} of {self.retries} in {wait:g} s"
                          + (f": {message}" if message else ""),
                          {"status": status, "attempt": attempt, "wait": wait, "message": message})
                if self.sleep(wait):
                    raise ModelCallError("cancelled while waiting to retry")
                continue
            tries = f" after {attempts} attempts" if attempt > 1 else ""
            raise ModelCallError(f"{said}{tries}" + (f": {message}" if message else ""))
        raise AssertionError("unreachable")  # pragma: no cover

    def _post_once(self, headers: dict[str, Any], payload: bytes) -> tuple[int, str, dict[str, Any], bytes]:
        """One request in a thread of its own, so a hard deadline holds whatever the socket does
        and ``cancel`` returns at once; an abandoned request ends at its socket's timeout."""
        box: dict[str, Any] = {}
        wake = self._wake = threading.Event()  # one per request: an abandoned one cannot wake a later wait

        def target() -> None:
            try:
                box["reply"] = post(self.url, headers, payload, self.timeout)
            except BaseException as exc:  # noqa: BLE001 - reported below
                box["error"] = exc
            finally:
                wake.set()

        worker = threading.Thread(target=target, name=f"model:{self.model}", daemon=True)
        started = time.monotonic()
        worker.start()
        while worker.is_alive() and not self._cancelled.is_set():
            left = self.timeout - (time.monotonic() - started)
            if left <= 0:
                break
            wake.wait(left)
        if self._cancelled.is_set():
            raise ModelCallError("cancelled")
        if worker.is_alive():
            raise ModelCallError(f"no complete reply from {address(self.url)} within {self.timeout:g} s (timeout)")
        if "error" in box:
            error = box["error"]
            if isinstance(error, ModelCallError):
                raise ModelCallError(self._scrub(str(error))) from None
            raise ModelCallError(self._scrub(f"{type(error).__name__}: {error}")) from None
        reply: tuple[int, str, dict[str, Any], bytes] = box["reply"]
        return reply

    def _output(self, text: str, tool_call: tuple[str, Any, int] | None, finish: str) -> str:
        """The step as text the format's parser reads."""
        text = self._set_thinking_aside(text)
        if tool_call is not None:
            name, arguments, count = tool_call
            if count > 1:
                self.note(f"the model asked for {count} tool calls at once; only the first ({name}) runs, one action per step",
                          {"tool_calls": count})
            thought = " ".join(text.split())
            written = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            lines = [f"Thought: {thought.removeprefix('Thought:').strip()}"] if thought else []
            return "\n".join([*lines, f"Action: {name}", f"Action Input: {written}"])
        if not text.strip():
            why = f" (finish reason: {finish}; raise max_tokens?)" if finish in ("length", "max_tokens") else \
                f" (finish reason: {finish})" if finish else ""
            raise ModelCallError(f"the model's reply holds no text{why}")
        observed = _OBSERVATION_LINE.search(text)
        if observed is not None:  # the server ignored the stop sequence
            dropped = text[observed.start():]
            self.note(f"the reply went on to write its own Observation; {len(dropped):,} characters from there are dropped",
                      {"dropped": dropped})
            text = text[:observed.start()].rstrip()
        return text

    def _set_thinking_aside(self, text: str) -> str:
        """A reasoning model's ``<think>...</think>`` preamble is noted, not parsed or sent back."""
        stripped = text.lstrip()
        if stripped.startswith("<think>") and "</think>" in stripped:
            thinking, _, rest = stripped[len("<think>"):].partition("</think>")
            self.note(f"the model's thinking ({len(thinking.strip()):,} characters) is set aside; the step is read from the rest",
                      {"thinking": thinking.strip()})
            return rest.strip()
        return text


def _check_number(name: str, value: Any, least: float, most: float, above: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > least if above else value >= least) and value <= most
    if not ok:
        low = f"more than {least:g}" if above else f"at least {least:g}"
        raise ValueError(f"{name} must be a number {low} and at most {most:g}, got {value!r}")


class OpenAIChatPolicy(ModelPolicy):
    """POST ``{base_url}/chat/completions``: OpenAI, or any server that speaks its API
    (Ollama: ``base_url="http://localhost:11434/v1"``, vLLM, llama.cpp, LM Studio)."""

    kind = "openai"
    api = "openai chat completions"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request_body(self, system: str, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.tool_calling == "native" and self.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": spec.get("name"), "description": spec.get("description", ""),
                "parameters": json_schema(spec)}} for spec in self.tools]
        else:
            body["stop"] = [STOP]
        return body

    def read_reply(self, data: dict[str, Any]) -> tuple[str, tuple[str, Any, int] | None, int | None, str]:
        if data.get("error"):
            raise ModelCallError(f"{address(self.url)} answered with an error: {error_message(json.dumps(data).encode())}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelCallError(f"the reply from {address(self.url)} has no choices: {snippet(json.dumps(data))}")
        choice = choices[0]
        message = _obj(choice.get("message"))
        finish = _text(choice.get("finish_reason"))
        content = message.get("content")
        if isinstance(content, list):  # content parts, as some servers send them
            content = "".join(part.get("text", "") for part in content
                              if isinstance(part, dict) and isinstance(part.get("text"), str))
        text = content if isinstance(content, str) else ""
        tool_call = None
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)] \
            if isinstance(message.get("tool_calls"), list) else []
        if calls:
            function = _obj(calls[0].get("function"))
            name = function.get("name")
            if not isinstance(name, str) or not name:
                raise ModelCallError("the reply's tool call has no function name")
            arguments = function.get("arguments", "{}")
            tool_call = (name, arguments if isinstance(arguments, (str, dict)) else json.dumps(arguments), len(calls))
        usage = _obj(data.get("usage"))
        prompt_tokens, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        tokens = prompt_tokens + completion if prompt_tokens is not None and completion is not None \
            else _count(usage.get("total_tokens"))
        return text, tool_call, tokens, finish


class AnthropicPolicy(ModelPolicy):
    """POST ``{base_url}/v1/messages``: Anthropic's Messages API (key in ``x-api-key``)."""

    kind = "anthropic"
    api = "anthropic messages"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"
    version = "2023-06-01"

    def headers(self, key: str | None) -> dict[str, str]:
        return {"anthropic-version": self.version, **({"x-api-key": key} if key else {})}

    def request_body(self, system: str, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.tool_calling == "native" and self.tools:
            body["tools"] = [{"name": spec.get("name"), "description": spec.get("description", ""),
                              "input_schema": json_schema(spec)} for spec in self.tools]
        else:
            body["stop_sequences"] = [STOP]
        return body

    def read_reply(self, data: dict[str, Any]) -> tuple[str, tuple[str, Any, int] | None, int | None, str]:
        if data.get("type") == "error" or data.get("error"):
            raise ModelCallError(f"{address(self.url)} answered with an error: {error_message(json.dumps(data).encode())}")
        content = data.get("content")
        if not isinstance(content, list):
            raise ModelCallError(f"the reply from {address(self.url)} has no content: {snippet(json.dumps(data))}")
        blocks = [block for block in content if isinstance(block, dict)]
        text = "".join(block["text"] for block in blocks if block.get("type") == "text" and isinstance(block.get("text"), str))
        uses = [block for block in blocks if block.get("type") == "tool_use"]
        tool_call = None
        if uses:
            name = uses[0].get("name")
            if not isinstance(name, str) or not name:
                raise ModelCallError("the reply's tool_use block has no name")
            tool_call = (name, uses[0].get("input", {}), len(uses))
        finish = _text(data.get("stop_reason"))
        usage = _obj(data.get("usage"))
        counts = [count for key in ("input_tokens", "output_tokens")
                  if (count := _count(usage.get(key))) is not None]
        tokens = None
        if len(counts) == 2:
            extra = (_count(usage.get(key)) or 0 for key in ("cache_creation_input_tokens", "cache_read_input_tokens"))
            tokens = sum(counts) + sum(extra)
        return text, tool_call, tokens, finish


MODEL_POLICIES: dict[str, type[ModelPolicy]] = {"openai": OpenAIChatPolicy, "anthropic": AnthropicPolicy}
