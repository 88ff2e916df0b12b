"""The ToyLLM agent loop's tax question, written the way that walkthrough writes it: tools
are plain functions with type hints (a calculator, and a key-value store's bound methods),
registered by name; a scripted model; the loop's own texts (``texts.TOYLLM``: ``error:``
observations, ``missing:KEY``, ``no more actions``, ``budget exhausted``).

``python -m agentdbg.examples.toyllm`` prints the run as the walkthrough's program does:
its pretty trace, then the final answer, the turns used and the tools used.
``sample_plans/seeds/toyllm_tax.toml`` is the same run as data."""

from __future__ import annotations

from typing import Any

from agentdbg.engine import ReActAgent, ToolRegistry, ToyScript, Trace
from agentdbg.engine.mock_tools import safe_eval
from agentdbg.engine.texts import TOYLLM

QUESTION = "What is 120 plus 15% tax, stored in kv?"

SCRIPT: list[dict[str, Any]] = [
    {"kind": "action", "thought": "store the base price", "action": "kv_set", "args": {"key": "base", "value": "120"}},
    {"kind": "action", "thought": "compute 15% tax", "action": "calculator", "args": {"expr": "120 * 0.15"}},
    {"kind": "action", "thought": "store the tax", "action": "kv_set", "args": {"key": "tax", "value": "18.0"}},
    {"kind": "action", "thought": "compute total", "action": "calculator", "args": {"expr": "120 + 18.0"}},
    {"kind": "action", "thought": "confirm stored values", "action": "kv_get", "args": {"key": "base"}},
    {"kind": "finish", "content": "the total including 15% tax is 138.0"},
]


def calculator(expr: str) -> str:
    """Arithmetic on numbers: + - * / and parentheses (walked, never eval'd)."""
    return str(safe_eval(expr))


class KVStore:
    def __init__(self) -> None:
        self._store: dict[str, str] = {}

    def get(self, key: str) -> str:
        """Read the value stored under a key."""
        return self._store.get(key, f"missing:{key}")

    def set(self, key: str, value: str) -> str:
        """Store a value under a key."""
        self._store[key] = value
        return f"stored {key}"


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register("calculator", calculator)
    kv = KVStore()
    tools.register("kv_get", kv.get)
    tools.register("kv_set", kv.set)
    return tools


def agent(script: list[dict[str, Any]] | None = None, max_steps: int = 10) -> ReActAgent:
    return ReActAgent(ToyScript(SCRIPT if script is None else script), registry(), max_steps=max_steps, texts=TOYLLM)


def report(trace: Trace, tools: ToolRegistry) -> list[str]:
    """What the walkthrough's program prints after a run."""
    return [*trace.history_lines(), "",
            f"final answer: {trace.outcome.describe()}",
            f"turns used:   {trace.turns_used}",
            f"tools used:   {tools.names}"]


def main() -> None:
    run = agent()
    trace = run.run(QUESTION)
    print("\n".join(report(trace, run.registry)))


if __name__ == "__main__":
    main()
