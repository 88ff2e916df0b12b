"""The whole corpus: recorded traces to start from, every case built from them, and a
deterministic sample.

The starting traces are recorded from the sample plans with ``agentdbg record`` (memory
plans included, a checkpoint every 2 steps so small runs carry checkpoints too, plans
with dangerous tools approved, so their approvals are in the traces) into a
directory the caller provides; ``build`` then makes the same list of cases from them on
every call, in the same order.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

from fuzz import binary_cases, export_cases, file_cases, fork_cases, import_cases, trace_cases
from fuzz.cases import Case

PLANS = Path(__file__).resolve().parents[2] / "sample_plans"
# Traces whose events are mutated where first found: the error-rich and memory-rich first.
BASE_ORDER = ["library_hallucinating", "memory_research", "tool_failures", "library_stuck", "capital_arithmetic",
              "kv_tax", "token_budget_small", "token_budget_large", "bad_arguments", "capital_over_budget",
              "library_good", "library_good_python", "library_hostile", "library_runaway", "population"]
CATEGORIES = ("trace-field", "trace-event", "import-field", "import-text", "damaged", "special", "sidecar",
              "fixture", "export", "fork")


def record_commands(base_dir: Path) -> list[list[str]]:
    """``agentdbg`` arguments that record every sample plan into ``base_dir``."""
    commands = []
    for plan in sorted(PLANS.glob("*.toml")):
        command = ["record", str(plan), "-o", str(base_dir / f"{plan.stem}.jsonl"), "--force",
                   "--checkpoint-every", "2"]
        text = plan.read_text(encoding="utf-8")
        if plan.stem.endswith("_python") or re.search(r"^executes_code\s*=\s*true", text, re.MULTILINE):
            command.append("--allow-code")  # the project's own plans (their side effects land in the scratch directory)
        if re.search(r"^dangerous\s*=\s*true", text, re.MULTILINE):
            command += ["--approve", "always"]  # approvals recorded in the trace
        commands.append(command)
    return commands


def build(base_dir: Path) -> list[Case]:
    """Every case, in a stable order, from the traces recorded into ``base_dir``."""
    order = BASE_ORDER + sorted(p.stem for p in PLANS.glob("*.toml") if p.stem not in BASE_ORDER)
    traces = trace_cases.Traces(base_dir, order)
    if not traces.names:
        raise FileNotFoundError(f"no recorded traces in {base_dir}")
    cases = (trace_cases.field_cases(traces) + trace_cases.event_cases(traces)
             + import_cases.field_cases() + import_cases.text_cases() + binary_cases.field_cases()
             + file_cases.damaged_cases(traces) + binary_cases.damage_cases() + file_cases.special_cases(traces)
             + file_cases.sidecar_cases(traces) + file_cases.fixture_cases(traces) + export_cases.cases()
             + fork_cases.fork_cases())
    seen: set[str] = set()
    duplicates = [case.id for case in cases if case.id in seen or seen.add(case.id)]
    if duplicates:
        raise ValueError(f"case ids are not unique: {sorted(duplicates)[:5]}")
    return cases


def sample(cases: list[Case], count: int, seed: int) -> list[Case]:
    """``count`` cases drawn evenly from every category (round robin over each category
    shuffled by ``seed``), in corpus order: the same arguments give the same sample."""
    if count >= len(cases):
        return list(cases)
    by_category: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_category[case.category].append(case)
    rng = random.Random(seed)
    queues = []
    for category in sorted(by_category):
        group = list(by_category[category])
        rng.shuffle(group)
        queues.append(group)
    chosen: set[str] = set()
    while len(chosen) < count:
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.add(queue.pop().id)
    return [case for case in cases if case.id in chosen]
