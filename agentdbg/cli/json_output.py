"""The JSON shapes of ``--json`` output (terminal-safe: ``agentdbg.text.escape_json``)."""

from __future__ import annotations

import json
from typing import Any

from agentdbg.cli.terminal import make_console as make_console
from agentdbg.engine import events as ev
from agentdbg.engine.verdicts import Verdict
from agentdbg.model.outcome import VERDICT_STYLES as VERDICT_STYLES
from agentdbg.model.state import RunInfo, StepRecord
from agentdbg.text import escape_json


def verdict_dict(verdict: Verdict | None) -> dict[str, Any] | None:
    return None if verdict is None else verdict.to_dict()



def dumps(data: Any) -> str:
    return escape_json(json.dumps(ev.jsonable(data), ensure_ascii=False))


def info_dict(info: RunInfo) -> dict[str, Any]:
    return {"name": info.name, "task": info.task, "policy": info.policy, "source": info.source,
            "tools": [spec.get("name") if isinstance(spec, dict) else spec for spec in info.tools],
            "guards": info.guards, "memory": info.memory}


def record_dict(record: StepRecord) -> dict[str, Any]:
    guards = record.guards
    return {
        "step": record.step,
        "marker": record.marker() or None,
        "thought": record.thought or None,
        "tool": record.tool,
        "args": record.args,
        "call": record.call or None,
        "parse_error": record.parse_error,
        "output": record.output or None,
        "error_kind": record.error_kind,
        "error": record.error,
        "observation": record.observation,
        "observation_error": record.observation_error,
        "answer": record.answer,
        "guards": None if guards is None else {
            "steps": guards.steps, "repeats": guards.repeats, "errors": guards.errors,
            "tokens": guards.tokens, "step_tokens": guards.step_tokens},
        "tripped": None if record.tripped is None else {"guard": record.tripped.guard, "message": record.tripped.message},
        "recalled": list(record.recalled),
        "memory": None if record.memory is None else record.memory.to_dict(),
        "raw": [event.to_dict() for event in record.raw],
        "end": None if record.end is None else record.end.to_dict(),
        "approval": None if record.approval is None else {
            "decision": record.approval.decision, "by": record.approval.by, "reason": record.approval.reason,
            "args": record.approval.args},
        "key": record.key or None,
        "replayed": record.replayed,
        "calls": [{"tool": call.tool, "args": call.args, "call": call.call, "id": call.id or None,
                   "observation": call.observation, "observation_error": call.observation_error,
                   "error_kind": call.error_kind, "error": call.error} for call in record.calls] or None,
        "plan": None if record.plan is None else {"items": record.plan.items, "revision": record.plan.revision},
        "plan_item": record.item or None,
        "reflection": None if record.reflection is None else {"text": record.reflection.text,
                                                              "on_step": record.reflection.on_step},
        "asked_policy": record.asked_policy,
    }
