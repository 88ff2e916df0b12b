"""Who may reach the debugger served to a browser: the checks every request passes.

The debugger shows every prompt, argument and observation of a run, and opens and writes
files, so a request is served only when

* its Host header names the address listened on (127.0.0.1, localhost, [::1] or the
  ``--host`` given, with the port): a page of another site whose name was made to point
  at this machine (DNS rebinding) sends that name, and is refused;
* it carries the token printed with the URL (``?token=``, or in the websocket's path),
  compared in constant time: another user of the machine, or a page guessing, gets
  nothing;
* a websocket's Origin is the page's own: a page of another site cannot drive the
  debugger through the user's browser.

Each check gives None or the reason of its refusal, in words (served as 403).
No web framework here: ``agentdbg.web.server`` applies them.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import string
from dataclasses import dataclass

from agentdbg.text import one_line

TOKEN_ENV = "AGENTDBG_SERVE_TOKEN"
MIN_TOKEN = 16  # characters of a token the user chooses
TOKEN_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-_.~")  # written in URLs as they are
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("", "0.0.0.0", "::")  # every address of the machine
HTTP_PORT = 80  # a Host header without a port means it


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be the server's (too short to resist guessing, or not
    writable in a URL as it is); None when it can."""
    if len(token) < MIN_TOKEN:
        return f"the token must be at least {MIN_TOKEN} characters long, got {len(token)}"
    if not set(token) <= TOKEN_CHARACTERS:
        return "the token may hold only letters, digits and - _ . ~ (it is written in the URL)"
    return None


def normal_name(name: str) -> str:
    """A host name as compared: lower case, an IP address in its shortest form, no brackets."""
    name = name.strip().strip("[]").lower()
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        return name


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, int] | None:
    """The name and port of a Host header (``[::1]:8000``, ``localhost``); None when it is
    not one (an IPv6 address without brackets, a port that is not a number)."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1:]
        if rest and not rest.startswith(":"):
            return None
    elif value.count(":") > 1:
        return None
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if not name:
        return None
    if not rest:
        return name, HTTP_PORT
    port_text = rest[1:]
    if not (port_text.isascii() and port_text.isdigit()) or len(port_text) > 5:
        return None
    return name, int(port_text)


@dataclass(frozen=True)
class Guard:
    token: str
    port: int
    names: frozenset[str]  # what the Host header may name, as normal_name gives them
    any_address: bool  # listening on every address: any IP address is this machine

    @classmethod
    def listening(cls, host: str, port: int, token: str) -> Guard:
        """The guard of a server listening on ``host``:``port``."""
        bound = normal_name(host)
        wildcard = bound in WILDCARDS
        names = frozenset(LOOPBACK_NAMES) | (frozenset() if wildcard else {bound})
        return cls(token, port, names, wildcard)

    def host_refusal(self, host: str | None) -> str | None:
        if not host:
            return "no Host header"
        shown = one_line(host, 100)
        parts = split_host(host)
        if parts is None:
            return f"Host {shown}: not a host name and port"
        name, port = parts
        if port != self.port:
            return f"Host {shown}: this server listens on port {self.port}"
        name = normal_name(name)
        if name in self.names or (self.any_address and is_address(name)):
            return None
        answers = ", ".join(sorted(f"[{name}]" if ":" in name else name for name in self.names))
        anywhere = " or an IP address" if self.any_address else ""
        return f"Host {shown}: this server answers to {answers}{anywhere} only (is the name pointed here by another site?)"

    def origin_refusal(self, origin: str | None, host: str) -> str | None:
        """``origin``: the websocket's Origin header; ``host``: its Host (checked already)."""
        own = f"http://{host}".lower()
        if origin is None:
            return f"a websocket without an Origin header (this page's is {one_line(own, 100)})"
        if origin.lower() in (own, "https" + own[4:]):
            return None
        return f"Origin {one_line(origin, 100)}: a page of another site (this page's is {one_line(own, 100)})"

    def token_refusal(self, *given: str | None) -> str | None:
        """None when one of ``given`` (from the query, from the path) is the token."""
        offered = [value for value in given if value]
        if not offered:
            return "no token: open the address agentdbg serve printed (it ends with ?token=...)"
        expected = self.token.encode()
        if any(hmac.compare_digest(value.encode("utf-8", "replace"), expected) for value in offered):
            return None
        return "wrong token: open the address agentdbg serve printed (it ends with ?token=...)"

    def page_url(self, host: str) -> str:
        """The address to open, token included (a wildcard: this machine's loopback one)."""
        name = normal_name(host)
        name = "127.0.0.1" if name in WILDCARDS else name
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{self.port}/?token={self.token}"
