"""The engine, the headless state derivation, the debugger core, the trace reader and the
importers import neither Textual nor Rich: they run without a screen (checked in a fresh
interpreter, every module of each package imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADLESS = ["agentdbg.engine", "agentdbg.model", "agentdbg.debugger", "agentdbg.trace",
            "agentdbg.importers", "agentdbg.exporters", "agentdbg.documents", "agentdbg.errors",
            "agentdbg.files", "agentdbg.plans", "agentdbg.state", "agentdbg.runs", "agentdbg.prompt"]
_UI_MODULES_AFTER_IMPORT = (
    "import importlib, json, pkgutil, sys\n"
    "package = importlib.import_module(sys.argv[1])\n"
    "for found in pkgutil.walk_packages(getattr(package, '__path__', []), package.__name__ + '.'):\n"
    "    importlib.import_module(found.name)\n"
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
)


def test_engine_imports_no_ui_libraries():
    code = (
        "import json, sys\n"
        "import agentdbg.engine, agentdbg.state, agentdbg.plans, agentdbg.runs, agentdbg.examples.library\n"
        "agentdbg.plans.load_plan('sample_plans/library_good.toml').run()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("package", HEADLESS)
def test_headless_package_imports_no_ui_libraries(package):
    out = subprocess.run([sys.executable, "-c", _UI_MODULES_AFTER_IMPORT, package], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [], f"{package} pulls in a UI library"
