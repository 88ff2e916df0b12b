"""The command line: version, help, and the subcommand dispatcher."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentdbg import __version__
from agentdbg.cli import SUBCOMMANDS, main


def test_version(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["--version"])
    assert raised.value.code == 0
    assert capsys.readouterr().out.strip() == f"agentdbg {__version__}"


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


def test_python_dash_m_runs_the_same_command():
    out = subprocess.run([sys.executable, "-m", "agentdbg", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"agentdbg {__version__}"


def test_readme_commands_are_the_ci_command():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    ci = (root / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in readme  # .ci/run runs exactly the README's test command
