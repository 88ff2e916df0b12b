"""The engine and the headless state derivation import neither Textual nor Rich."""

from __future__ import annotations

import json
import subprocess
import sys


def test_engine_imports_no_ui_libraries():
    code = (
        "import json, sys\n"
        "import agentdbg.engine, agentdbg.state, agentdbg.plans, agentdbg.runs, agentdbg.examples.library\n"
        "agentdbg.plans.load_plan('sample_plans/library_good.toml').run()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
