"""``agentdbg serve [FILE]``: the debugger in a web browser, through textual-serve.

Each browser tab that opens the page starts its own debugger process on FILE (the same
command as ``agentdbg FILE``) and talks to it over a websocket. The debugger shows
everything a run holds (prompts, tool arguments, observations) and opens and writes
files, so it is guarded: the server listens on this machine only (127.0.0.1) unless
``--public`` is given, which says so loudly; every request needs the token printed with
the address and must name that address (``agentdbg.web.guard``); the paths typed into
the debugger stay in FILE's folder (the current one for the demo) unless
``--allow-any-path`` is given. Needs the optional extra: ``pip install "agentdbg[web]"``.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import sys
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="plan, trace or saved run (default: the bundled demo)")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--public", action="store_true",
                        help="allow an address other machines can reach (whoever reaches it with the token sees the run)")
    parser.add_argument("--token", help="the token the address must carry (default: a new random one; "
                        "AGENTDBG_SERVE_TOKEN sets it too, unseen by other users of this machine)")
    parser.add_argument("--allow-any-path", action="store_true",
                        help="let the page open and write files anywhere (default: in FILE's folder only)")
    parser.add_argument("--format", help="read FILE as this format instead of detecting it")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan that runs Python code")
    parser.add_argument("--allow-network", action="store_true", help="allow a plan that calls a model over the network")
    parser.add_argument("--approve", choices=("always", "never"),
                        help="decide every call to a plan's dangerous tools in advance")
    parser.add_argument("--plan", metavar="PLAN", help="the plan a fork (E) re-runs the runs with")
    parser.add_argument("--run", type=int, default=1, metavar="N", help="open run N of a file with several")


def is_loopback(host: str) -> bool:
    """Only this machine can reach ``host`` (a name is trusted only as localhost)."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def served_folder(args: argparse.Namespace) -> Path:
    """The folder a page's paths are kept in: FILE's, or the current one for the demo."""
    if args.file:
        return Path(os.path.abspath(Path(args.file).expanduser())).parent
    return Path.cwd()


def debugger_command(args: argparse.Namespace) -> str:
    """The command each page runs: ``agentdbg FILE`` with the same options, confined to
    the folder served unless ``--allow-any-path``."""
    argv = [sys.executable, "-m", "agentdbg"]
    if args.file:
        argv.append(os.path.abspath(Path(args.file).expanduser()))
    if args.format:
        argv += ["--format", args.format]
    if args.allow_code:
        argv.append("--allow-code")
    if args.allow_network:
        argv.append("--allow-network")
    if args.approve:
        argv += ["--approve", args.approve]
    if getattr(args, "plan", None):
        argv += ["--plan", os.path.abspath(Path(args.plan).expanduser())]  # (the debugger moves into the folder)
    if args.run != 1:
        argv += ["--run", str(args.run)]
    if not getattr(args, "allow_any_path", False):
        argv += ["--confine", str(served_folder(args))]
    return shlex.join(argv)


def chosen_token(args: argparse.Namespace) -> tuple[str | None, str]:
    """The token (``--token``, else AGENTDBG_SERVE_TOKEN, else a new one), or None and why
    the one given cannot be. The variable is taken out of the environment: the debuggers
    started for the pages have no use for it."""
    from agentdbg.web.guard import TOKEN_ENV, new_token, token_problem

    from_env = os.environ.pop(TOKEN_ENV, "")
    token, source = (args.token, "--token") if args.token is not None else (from_env, TOKEN_ENV)
    if not token:
        if args.token is not None:
            return None, "--token: empty (there is no serving without a token)"
        return new_token(), ""
    problem = token_problem(token)
    return (None, f"{source}: {problem}") if problem else (token, "")


def run(args: argparse.Namespace) -> int:
    from agentdbg.text import one_line

    if not 0 < args.port < 65536:
        print(f"agentdbg serve: --port must be 1 to 65535, got {args.port}", file=sys.stderr)
        return 2
    if not is_loopback(args.host):
        if not args.public:
            print(f"agentdbg serve: refusing to listen on {one_line(args.host, 100)}: other machines could "
                  "see the run (prompts, arguments, observations). Use 127.0.0.1, or --public if you mean it.",
                  file=sys.stderr)
            return 2
        print(f"agentdbg serve: WARNING: listening on {one_line(args.host, 100)} with --public: anyone who "
              "can reach this port and has the token sees the run and can drive the debugger. The token "
              "crosses the network in clear: use it on a network you trust, or an SSH tunnel instead.",
              file=sys.stderr)
    if args.file and not Path(args.file).expanduser().exists():
        print(f"agentdbg serve: {one_line(args.file, 300)}: no such file", file=sys.stderr)
        return 2
    token, problem = chosen_token(args)
    if token is None:
        print(f"agentdbg serve: {one_line(problem, 300)}", file=sys.stderr)
        return 2
    try:
        from agentdbg.web.guard import Guard
        from agentdbg.web.server import GuardedServer
    except ImportError:
        print('agentdbg serve: needs textual-serve: pip install "agentdbg[web]"', file=sys.stderr)
        return 2
    if args.allow_any_path:
        print("agentdbg serve: --allow-any-path: the page may open and write files anywhere you can",
              file=sys.stderr)
    title = f"agentdbg {Path(args.file).name}" if args.file else "agentdbg demo"
    server = GuardedServer(debugger_command(args), host=args.host, port=args.port, title=title,
                           guard=Guard.listening(args.host, args.port, token))
    try:
        server.serve()
    except OSError as exc:
        print(f"agentdbg serve: cannot listen on {one_line(args.host, 100)}:{args.port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
