"""Where a model policy's requests go, and how: addresses checked (http or https, no
credentials in them, what counts as this machine), one POST over the standard library's
client (no redirect followed, a size limit on the reply), and every failure turned into a
``ModelCallError`` that says what happened and where."""

from __future__ import annotations

import ipaddress
import json
import math
import re
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from http.client import HTTPException
from typing import Any

MAX_REPLY_BYTES = 16 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ModelCallError(Exception):
    """The call to the model failed: the message says what, and where it was sent."""


def is_loopback(host: str) -> bool:
    """``localhost`` or a literal loopback address; no name is resolved (it could lie)."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(url: str) -> urllib.parse.SplitResult:
    """An http(s) address without credentials, query or fragment; ValueError says what is wrong."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError("base_url must be an http:// or https:// address")
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an http:// or https:// address with a host, got {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("base_url must not hold a user name or password; name the variable that holds the key in api_key_env")
    if parts.query or parts.fragment:
        raise ValueError(f"base_url must not have a query or a fragment, got {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ValueError(f"base_url has an invalid port: {url!r}") from None
    return parts


def key_over_plain_http(url: str) -> bool:
    """True when a key sent to ``url`` would cross a network in clear text."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "http" and not is_loopback(parts.hostname or "")


def check_env_name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name or ""):
        raise ValueError(f"api_key_env must be the name of an environment variable (letters, digits, _), got {name!r}")
    return name


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: it could carry the key to another host."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


def _read(response: Any, limit: int) -> bytes:
    data: bytes = response.read(limit + 1)
    if len(data) > limit:
        raise ModelCallError(f"the reply is larger than {limit:,} bytes")
    return data


def post(url: str, headers: dict[str, str], body: bytes, timeout: float) -> tuple[int, str, dict[str, Any], bytes]:
    """POST ``body``: (status, reason, headers, reply bytes) for any HTTP answer; a failure to
    get one raises ModelCallError. Proxies from the environment are used, except for a
    loopback host; redirects are not followed."""
    host = urllib.parse.urlsplit(url).hostname or ""
    proxies = urllib.request.ProxyHandler({} if is_loopback(host) else None)
    opener = urllib.request.build_opener(proxies, _NoRedirect)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.reason, dict(response.headers), _read(response, MAX_REPLY_BYTES)
    except urllib.error.HTTPError as exc:
        try:
            data = exc.read(MAX_ERROR_BYTES)
        except (OSError, HTTPException):
            data = b""
        return exc.code, str(exc.reason or ""), dict(exc.headers or {}), data
    except urllib.error.URLError as exc:
        raise ModelCallError(_connection_problem(exc.reason, url, timeout)) from None
    except (OSError, HTTPException) as exc:
        raise ModelCallError(_connection_problem(exc, url, timeout)) from None


def _connection_problem(reason: Any, url: str, timeout: float) -> str:
    target = address(url)
    if isinstance(reason, ConnectionRefusedError):
        return f"cannot connect to {target}: connection refused (is the server running?)"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"no reply from {target} within {timeout:g} s (timeout)"
    if isinstance(reason, socket.gaierror):
        return f"cannot find the host of {target}: {reason.strerror or reason}"
    if isinstance(reason, ssl.SSLError):
        return f"TLS failed with {target}: {getattr(reason, 'verify_message', None) or reason.reason or reason}"
    if isinstance(reason, HTTPException):
        return f"{target} broke off the reply ({type(reason).__name__}{': ' + str(reason) if str(reason) else ''})"
    if isinstance(reason, OSError) and reason.strerror:
        return f"cannot reach {target}: {reason.strerror}"
    return f"cannot reach {target}: {reason}"


def address(url: str) -> str:
    """The URL as errors show it: scheme, host, port and path."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def snippet(data: bytes | str, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def error_message(data: bytes) -> str:
    """What an error reply says: ``error.message`` in both APIs' shapes, else its text."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return snippet(data)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        kind = error.get("type") or error.get("code")
        return snippet(f"{error['message']}" + (f" ({kind})" if isinstance(kind, str) and kind else ""))
    if isinstance(error, str):
        return snippet(error)
    return snippet(data)


def retry_after(headers: dict[str, Any]) -> float | None:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                seconds = float(value)
            except (TypeError, ValueError):
                return None
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


