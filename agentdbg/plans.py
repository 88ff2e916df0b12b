"""Plans: runnable scripted runs written as TOML data (see ``docs/plans.md``).

A plan names the task, the mock tools and their data, the policy's scripted outputs and
the guard settings. Loading a plan never executes code; a plan whose policy is Python code
must say ``executes_code = true`` and the caller must pass ``allow_code=True``. Likewise a
plan whose policy calls a model over the network must say ``calls_model = true`` and the
caller must pass ``allow_network=True``: opening a file never sends anything anywhere.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.agent import AgentRun, ReActAgent, Trace
from agentdbg.engine.approval import Approver
from agentdbg.engine.grid import (
    MAX_CELLS_DRAWN,
    MAX_SIDE,
    Grid,
    GridError,
    GridWorld,
    grid_task,
    random_grids,
)
from agentdbg.engine.grid_policies import GRID_AGENTS, GridPolicy
from agentdbg.engine.guards import ErrorBudget, RepetitionGuard, TokenBudget
from agentdbg.engine.journal import OperationJournal
from agentdbg.engine.memory import INDEXES, RECALL_QUERIES, TieredMemory
from agentdbg.engine.memory_ann import INSTALL_HINT as ANN_INSTALL_HINT
from agentdbg.engine.memory_ann import ann_available
from agentdbg.engine.memory_embedding import HashedBagOfWords
from agentdbg.engine.memory_summary import SUMMARIZERS
from agentdbg.engine.mock_tools import KeyValueStore, calculator, pretend, scripted, table_lookup
from agentdbg.engine.model_http import check_base_url, check_env_name, key_over_plain_http
from agentdbg.engine.model_policies import MODEL_POLICIES, ModelPolicy
from agentdbg.engine.parsers import PARSERS
from agentdbg.engine.policies import (
    CallablePolicy,
    Policy,
    Rule,
    RulePolicy,
    ScriptedOutputs,
    ScriptedPlan,
    ToyScript,
)
from agentdbg.engine.texts import AGENTDBG, TEXTS
from agentdbg.engine.tools import MAX_TOOL_TIMEOUT, Tool, ToolRegistry
from agentdbg.files import OpenError, read_bounded, read_head, size_text

TOOL_KINDS = ("calculator", "table", "kv_set", "kv_get", "scripted", "pretend", "python")
POLICY_KINDS = ("outputs", "plan", "script", "rules", "python", "openai", "anthropic", "grid")
MODEL_KEYS = ("kind", "model", "base_url", "api_key_env", "format", "tool_calling", "temperature", "max_tokens",
              "timeout", "retries", "backoff", "instructions")
MAX_EMBEDDING_DIM = 4096  # a data file must not be able to make every stored turn huge
MAX_PLAN_BYTES = 4 * 1024 * 1024  # a plan is a page of settings and scripts: more is not a plan
PLAN_SNIFF_BYTES = 200_000
MAX_GRID_EPISODE = 10_000  # [grid] episode: the grids before it are drawn too  # where looks_like_plan looks for the [policy] table


class PlanError(ValueError):
    """A plan that cannot be loaded: says which file, where, and what is wrong."""


@dataclass
class Plan:
    """A loaded plan. ``build_agent`` makes a fresh agent (fresh tool state) each time.
    ``dangerous_tools`` wait for a decision before each call (``approver``; without one,
    each call is denied); ``keyed_tools`` have an operation key."""

    name: str
    task: str
    description: str
    path: Path | None
    config: dict[str, Any] = field(repr=False)
    build_agent: Callable[[], ReActAgent] = field(repr=False)
    dangerous_tools: list[str] = field(default_factory=list)
    keyed_tools: list[str] = field(default_factory=list)
    sha256: str = ""  # of the plan's text, recorded in its runs' run_start beside its path

    @property
    def runs_code(self) -> bool:
        """The plan says it runs Python code (a python policy or tool)."""
        return self.config.get("executes_code") is True

    def start(self, on_event: Callable[[ev.Event], None] | None = None, approver: Approver | None = None,
              journal: OperationJournal | None = None) -> AgentRun:
        agent = self.build_agent()
        agent.approver = approver
        return agent.start(self.task, on_event, journal)

    def run(self, on_event: Callable[[ev.Event], None] | None = None, approver: Approver | None = None,
            journal: OperationJournal | None = None) -> Trace:
        agent = self.build_agent()
        agent.approver = approver
        return agent.run(self.task, on_event, journal)


def looks_like_plan(path: Path) -> bool:
    """A TOML file with a [policy] table: cheap to ask, before trying to read it as a trace."""
    if path.suffix.lower() != ".toml":
        return False
    try:
        head = read_head(path, PLAN_SNIFF_BYTES).decode("utf-8", errors="replace")
    except OpenError:  # missing, a directory, a pipe or a device: not a plan
        return False
    return re.search(r"^[ \t]*\[policy\]", head, re.M) is not None  # not \s*: quadratic over blank lines


def load_plan(path: str | Path, allow_code: bool = False, allow_network: bool = False) -> Plan:
    """Read and check the plan at ``path`` (a regular file of at most MAX_PLAN_BYTES)."""
    path = Path(path)
    return parse_plan_bytes(read_plan_bytes(path), path, allow_code=allow_code, allow_network=allow_network)


def parse_plan_bytes(data: bytes, path: Path, allow_code: bool = False, allow_network: bool = False) -> Plan:
    """The plan in ``data``, read from ``path``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_plan(text, path, allow_code=allow_code, allow_network=allow_network)


def parse_plan(text: str, path: str | Path | None = None, allow_code: bool = False,
               allow_network: bool = False) -> Plan:
    where = _Locator(text, str(path) if path else "<plan>")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{where.name}: not valid TOML: {exc}") from None
    return _Builder(data, where, Path(path) if path else None, allow_code, allow_network,
                    plan_sha256(text.encode("utf-8"))).plan()


def plan_sha256(data: bytes) -> str:
    """The hash a run records of its plan file's bytes (``run_start.source_sha256``)."""
    return hashlib.sha256(data).hexdigest()


def read_plan_bytes(path: str | Path) -> bytes:
    """The plan file's bytes (a regular file of at most MAX_PLAN_BYTES); PlanError says why not."""
    try:
        return read_bounded(Path(path), MAX_PLAN_BYTES, f"plans are at most {size_text(MAX_PLAN_BYTES)}", what="a plan")
    except OpenError as exc:
        raise PlanError(str(exc)) from None


class _Locator:
    """Finds the line a table or key sits on, so errors can say file:line."""

    def __init__(self, text: str, name: str):
        self.lines = text.splitlines()
        self.name = name

    def line(self, table: str, index: int = 0, key: str | None = None) -> int | None:
        header = re.compile(r"^\s*\[\[?\s*" + re.escape(table) + r"\s*\]\]?\s*$")
        seen = -1
        start = None
        for number, line in enumerate(self.lines, 1):
            if header.match(line):
                seen += 1
                if seen == index:
                    start = number
                    if key is None:
                        return number
            elif start is not None and key is not None:
                if re.match(r"^\s*\[", line):
                    break
                if re.match(r"^\s*" + re.escape(key) + r"\s*=", line):
                    return number
        if table == "" and key is not None:
            for number, line in enumerate(self.lines, 1):
                if re.match(r"^\s*" + re.escape(key) + r"\s*=", line):
                    return number
        return start

    def error(self, message: str, table: str = "", index: int = 0, key: str | None = None) -> PlanError:
        line = self.line(table, index, key)
        at = f"{self.name}:{line}" if line else self.name
        return PlanError(f"{at}: {message}")


class _Builder:
    def __init__(self, data: dict[str, Any], where: _Locator, path: Path | None, allow_code: bool,
                 allow_network: bool = False, sha256: str = ""):
        self.data = data
        self.where = where
        self.path = path
        self.sha256 = sha256
        self.allow_code = allow_code
        self.allow_network = allow_network
        self.texts = AGENTDBG  # the plan's texts = "...", read first by plan()

    def want(self, table: dict, key: str, kind: type | tuple, section: str, index: int = 0,
             default: Any = ..., label: str = "") -> Any:
        if key not in table:
            if default is ...:
                raise self.where.error(f"{label or section or 'plan'}: missing {key!r}", section, index)
            return default
        value = table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            names = " or ".join(k.__name__ for k in kinds)
            raise self.where.error(
                f"{label or section or 'plan'}: {key!r} should be {names}, got {type(value).__name__}",
                section, index, key,
            )
        return value

    def timeout(self, table: dict, key: str, section: str, index: int = 0, default: float | None = None,
                label: str = "") -> float | None:
        """Seconds a tool may run: a positive, finite number (a waiting thread cannot take inf or nan),
        at most MAX_TOOL_TIMEOUT (a longer limit looks like a hung run)."""
        value = self.want(table, key, (int, float), section, index, default=default, label=label)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise self.where.error(f"{label or f'[{section}]'}: {key} must be a positive number of seconds, got {value}",
                                   section, index, key)
        if value is not None and value > MAX_TOOL_TIMEOUT:
            raise self.where.error(f"{label or f'[{section}]'}: {key} must be at most {MAX_TOOL_TIMEOUT:g} seconds, "
                                   f"got {value:g}", section, index, key)
        return value

    def plan(self) -> Plan:
        data = self.data
        task = self.want(data, "task", str, "")
        name = self.want(data, "name", str, "", default=self.path.stem if self.path else "plan")
        description = self.want(data, "description", str, "", default="")
        task_label = self.want(data, "task_label", str, "", default="Question")
        # The right answer, when the plan knows it: the run's end then says correct or wrong.
        expected = self.want(data, "expected", (str, int), "", default=None)
        expected = None if expected is None else str(expected)
        # Reflexion-style: after a failed step, the policy is asked to critique it before it tries again.
        reflect = self.want(data, "reflect", bool, "", default=False)
        known = {"name", "task", "description", "task_label", "expected", "guards", "tools", "policy",
                 "memory", "executes_code", "calls_model", "grid", "reflect", "texts"}
        for key in data:
            if key not in known:
                raise self.where.error(f"unknown key {key!r}; a plan has {', '.join(sorted(known))}", "", key=key)
        texts_name = self.want(data, "texts", str, "", default="agentdbg")
        if texts_name not in TEXTS:
            raise self.where.error(f"texts must be one of {', '.join(TEXTS)}, got {texts_name!r}", "", key="texts")
        self.texts = TEXTS[texts_name]
        tool_specs = self.want(data, "tools", list, "", default=[])
        guards = self.want(data, "guards", dict, "", default={})
        policy_spec = self.want(data, "policy", dict, "")
        memory_spec = self.want(data, "memory", dict, "", default=None)
        grid_spec = self.want(data, "grid", dict, "", default=None)
        grid = self.grid(grid_spec) if grid_spec is not None else None
        # Validate everything now, so a broken plan fails at load, not at step 3.
        tools = self.tools(tool_specs)
        if grid is not None:  # the world's moves are tools too
            tools = self.grid_tools(tools, GridWorld(grid))
            task = grid_task(GridWorld(grid), task)
        self.policy(policy_spec)
        guard_kwargs = self.guards(guards)
        if memory_spec is not None:
            self.memory(memory_spec)
        source = str(self.path) if self.path else ""
        source_sha256 = self.sha256 if self.path else ""

        def build_agent() -> ReActAgent:
            run_tools = self.tools(tool_specs)
            if grid is not None:
                run_tools += GridWorld(grid).tools()  # a fresh world: every run starts at the start
            registry = ToolRegistry(run_tools, default_timeout=guard_kwargs["tool_timeout"])
            return ReActAgent(
                self.policy(policy_spec),
                registry,
                max_steps=guard_kwargs["max_steps"],
                guards=guard_kwargs["guards"](),
                memory=self.memory(memory_spec) if memory_spec is not None else None,
                task_label=task_label,
                name=name,
                source=source,
                expected=expected,
                texts=self.texts,
                reflect=reflect,
                source_sha256=source_sha256,
            )

        return Plan(name, task, description, self.path, data, build_agent,
                    dangerous_tools=[tool.name for tool in tools if tool.dangerous],
                    keyed_tools=[tool.name for tool in tools if tool.idempotency_key is not None],
                    sha256=self.sha256)

    def guards(self, spec: dict) -> dict[str, Any]:
        known = {"max_steps", "repeat", "repeat_threshold", "max_consecutive_errors", "token_budget", "tool_timeout"}
        for key in spec:
            if key not in known:
                raise self.where.error(f"[guards]: unknown key {key!r}; known: {', '.join(sorted(known))}", "guards", key=key)
        max_steps = self.want(spec, "max_steps", int, "guards", default=10)
        repeat = self.want(spec, "repeat", str, "guards", default="off")
        threshold = self.want(spec, "repeat_threshold", int, "guards", default=None)
        errors = self.want(spec, "max_consecutive_errors", int, "guards", default=None)
        tokens = self.want(spec, "token_budget", int, "guards", default=None)
        timeout = self.timeout(spec, "tool_timeout", "guards", default=10.0)
        if repeat not in ("off", "any", "consecutive"):
            raise self.where.error(f"[guards]: repeat must be off, any or consecutive, got {repeat!r}", "guards", key="repeat")
        try:
            # Built once to validate; a factory, because guards count per run.
            def make() -> list:
                out: list = []
                if repeat != "off":
                    out.append(RepetitionGuard(repeat, threshold))
                if errors is not None:
                    out.append(ErrorBudget(errors))
                if tokens is not None:
                    out.append(TokenBudget(tokens))
                return out

            make()
            if max_steps < 0:
                raise ValueError(f"max_steps must be 0 or more, got {max_steps}")
        except ValueError as exc:
            raise self.where.error(f"[guards]: {exc}", "guards") from None
        return {"max_steps": max_steps, "guards": make, "tool_timeout": float(timeout)}

    def tools(self, specs: list) -> list[Tool]:
        tools: list[Tool] = []
        stores: dict[str, KeyValueStore] = {}
        names: set[str] = set()
        for index, spec in enumerate(specs):
            label = f"[[tools]] #{index + 1}"
            if not isinstance(spec, dict):
                raise self.where.error(f"{label}: should be a table", "tools", index)
            name = self.want(spec, "name", str, "tools", index, label=label)
            label = f"[[tools]] #{index + 1} ({name})"
            if name in names:
                raise self.where.error(f"{label}: a second tool named {name!r}", "tools", index, "name")
            names.add(name)
            kind = self.want(spec, "kind", str, "tools", index, label=label)
            description = self.want(spec, "description", str, "tools", index, default="", label=label)
            dangerous = self.want(spec, "dangerous", bool, "tools", index, default=None, label=label)
            key = self.want(spec, "idempotency_key", (str, list), "tools", index, default=None, label=label)
            timeout = self.timeout(spec, "timeout", "tools", index, label=label)
            if kind == "calculator":
                tool = calculator(name, self.want(spec, "param", str, "tools", index, default="expression", label=label), description)
            elif kind == "table":
                rows = self.want(spec, "rows", dict, "tools", index, label=label)
                param = self.want(spec, "param", str, "tools", index, default="key", label=label)
                tool = table_lookup(name, rows, param, description)
            elif kind in ("kv_set", "kv_get"):
                store_name = self.want(spec, "store", str, "tools", index, default="default", label=label)
                store = stores.setdefault(store_name, KeyValueStore())
                tool = store.set_tool(name, description) if kind == "kv_set" else \
                    store.get_tool(name, description, missing=self.texts.kv_missing)
            elif kind == "scripted":
                responses = self.want(spec, "responses", list, "tools", index, label=label)
                params = self.want(spec, "params", dict, "tools", index, default={}, label=label)
                try:
                    tool = scripted(name, responses, params, description)
                except ValueError as exc:
                    raise self.where.error(f"{label}: {exc}", "tools", index) from None
            elif kind == "pretend":
                params = self.want(spec, "params", dict, "tools", index, default={}, label=label)
                reply = self.want(spec, "reply", str, "tools", index, label=label)
                try:
                    tool = pretend(name, params, reply, description)
                except ValueError as exc:
                    raise self.where.error(f"{label}: {exc}", "tools", index) from None
            elif kind == "python":
                tool = self.python_tool(spec, name, description, index, label)
            else:
                raise self.where.error(f"{label}: unknown kind {kind!r}; use one of {', '.join(TOOL_KINDS)}", "tools", index, "kind")
            if dangerous is not None:
                tool.dangerous = dangerous
            if key is not None:
                if isinstance(key, list) and not all(isinstance(item, str) for item in key):
                    raise self.where.error(f"{label}: idempotency_key should be a parameter name or a list of them",
                                           "tools", index, "idempotency_key")
                try:
                    tool.idempotency_key = key
                except (TypeError, ValueError) as exc:
                    message = str(exc).removeprefix(f"tool {name!r}: ")
                    raise self.where.error(f"{label}: {message}", "tools", index, "idempotency_key") from None
            if timeout is not None:
                tool.timeout = float(timeout)
            tools.append(tool)
        return tools

    def python_tool(self, spec: dict, name: str, description: str, index: int, label: str) -> Tool:
        """kind = "python": a tool from a function (``callable = "module:function"``), described
        from its type hints. Runs code, so it must be declared and allowed, as a python policy."""
        target = self.want(spec, "callable", str, "tools", index, label=label)
        if self.data.get("executes_code") is not True:
            raise self.where.error(f"{label}: a python tool runs code; the plan must say executes_code = true",
                                   "tools", index, "kind")
        if not self.allow_code:
            raise self.where.error(f"this plan runs Python code ({target}); run it only if you trust it, with --allow-code",
                                   "tools", index, "callable")
        module_name, _, attr = target.partition(":")
        try:
            fn = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise self.where.error(f"{label}: cannot load {target!r}: {exc}", "tools", index, "callable") from None
        try:
            return Tool.from_function(fn, name=name, description=description or None)
        except (TypeError, ValueError) as exc:
            raise self.where.error(f"{label}: {exc}", "tools", index, "callable") from None

    def policy(self, spec: dict) -> Policy:
        kind = self.want(spec, "kind", str, "policy")
        if kind not in POLICY_KINDS:
            raise self.where.error(f"[policy]: unknown kind {kind!r}; use one of {', '.join(POLICY_KINDS)}", "policy", key="kind")
        if kind == "outputs":
            outputs = self.want(spec, "outputs", list, "policy")
            fmt = self.want(spec, "format", str, "policy", default="bracket")
            then = self.want(spec, "then", str, "policy", default="stop")
            if fmt not in PARSERS or fmt in ("plan", "script"):
                raise self.where.error(f"[policy]: format must be bracket, colon, json or numbered, got {fmt!r}", "policy", key="format")
            for i, output in enumerate(outputs):
                if not isinstance(output, str):
                    raise self.where.error(f"[policy]: output #{i + 1} should be text", "policy", key="outputs")
            try:
                return ScriptedOutputs(outputs, fmt, then)
            except ValueError as exc:
                raise self.where.error(f"[policy]: {exc}", "policy") from None
        if kind == "rules":
            return self.rule_policy(spec)
        if kind == "grid":
            return self.grid_policy(spec)
        if kind in MODEL_POLICIES:
            return self.model_policy(kind, spec)
        if kind in ("plan", "script"):
            steps = self.want(spec, "steps", list, "policy")
            for i, step in enumerate(steps):
                if not isinstance(step, dict):
                    raise self.where.error(f"[[policy.steps]] #{i + 1}: should be a table", "policy.steps", i)
            if kind == "plan":
                plan_steps = []
                for i, step in enumerate(steps):
                    tool = self.want(step, "tool", str, "policy.steps", i, label=f"[[policy.steps]] #{i + 1}")
                    args = self.want(step, "args", dict, "policy.steps", i, default={}, label=f"[[policy.steps]] #{i + 1}")
                    plan_steps.append((tool, args))
                return ScriptedPlan(plan_steps)
            return ToyScript([dict(step) for step in steps])
        # kind == "python": code, so it must be declared and allowed.
        target = self.want(spec, "callable", str, "policy")
        fmt = self.want(spec, "format", str, "policy", default="bracket")
        if self.data.get("executes_code") is not True:
            raise self.where.error("[policy]: a python policy runs code; the plan must say executes_code = true", "policy", key="kind")
        if not self.allow_code:
            raise self.where.error(
                f"this plan runs Python code ({target}); run it only if you trust it, with --allow-code",
                "policy", key="callable",
            )
        module_name, _, attr = target.partition(":")
        try:
            fn = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise self.where.error(f"[policy]: cannot load {target!r}: {exc}", "policy", key="callable") from None
        return CallablePolicy(fn, fmt, name=target)

    def rule_policy(self, spec: dict) -> RulePolicy:
        """kind = "rules": [[policy.rules]] with when (a regex searched in the prompt), say
        (the output; {1}, {2}... from the regex's groups) and once. Regexes compile here."""
        rules = self.want(spec, "rules", list, "policy")
        fmt = self.want(spec, "format", str, "policy", default="bracket")
        if fmt not in PARSERS or fmt in ("plan", "script"):
            raise self.where.error(f"[policy]: format must be bracket, colon, json or numbered, got {fmt!r}", "policy", key="format")
        if not rules:
            raise self.where.error("[policy]: a rules policy needs at least one [[policy.rules]]", "policy", key="rules")
        built = []
        for i, rule in enumerate(rules):
            label = f"[[policy.rules]] #{i + 1}"
            if not isinstance(rule, dict):
                raise self.where.error(f"{label}: should be a table", "policy.rules", i)
            for key in rule:
                if key not in ("when", "say", "once"):
                    raise self.where.error(f"{label}: unknown key {key!r}; known: once, say, when", "policy.rules", i, key)
            say = self.want(rule, "say", str, "policy.rules", i, label=label)
            when = self.want(rule, "when", str, "policy.rules", i, default=None, label=label)
            once = self.want(rule, "once", bool, "policy.rules", i, default=False, label=label)
            try:
                built.append(Rule.build(say, when, once))
            except ValueError as exc:
                key = "when" if when is not None and "regular expression" in str(exc) else "say"
                raise self.where.error(f"{label}: {exc}", "policy.rules", i, key) from None
        return RulePolicy(built, fmt)

    def model_policy(self, kind: str, spec: dict) -> ModelPolicy:
        """kind = "openai" / "anthropic": a model called over HTTP (docs/plans.md, "Real models").
        Every setting is checked first; then the plan must declare calls_model = true and the
        caller must allow the network before the key's variable is even read."""
        for key in spec:
            if key == "api_key":
                raise self.where.error("[policy]: a plan never holds an API key; name the environment variable "
                                       'that holds it instead, e.g. api_key_env = "OPENAI_API_KEY"', "policy", key=key)
            if key not in MODEL_KEYS:
                raise self.where.error(f"[policy]: unknown key {key!r} for an {kind} policy; known: "
                                       f"{', '.join(sorted(MODEL_KEYS))}", "policy", key=key)
        cls = MODEL_POLICIES[kind]
        model = self.want(spec, "model", str, "policy", label="[policy]")
        base_url = self.want(spec, "base_url", str, "policy", default=cls.default_base_url, label="[policy]")
        key_env = self.want(spec, "api_key_env", str, "policy", default=None, label="[policy]")
        settings = {
            "format": self.want(spec, "format", str, "policy", default=None, label="[policy]"),
            "tool_calling": self.want(spec, "tool_calling", str, "policy", default="text", label="[policy]"),
            "temperature": self.want(spec, "temperature", (int, float), "policy", default=None, label="[policy]"),
            "max_tokens": self.want(spec, "max_tokens", int, "policy", default=1024, label="[policy]"),
            "timeout": self.want(spec, "timeout", (int, float), "policy", default=60.0, label="[policy]"),
            "retries": self.want(spec, "retries", int, "policy", default=2, label="[policy]"),
            "backoff": self.want(spec, "backoff", (int, float), "policy", default=1.0, label="[policy]"),
            "instructions": self.want(spec, "instructions", str, "policy", default="", label="[policy]"),
        }

        def build(**key: Any) -> ModelPolicy:
            try:
                return cls(model, base_url=base_url, **settings, **key)
            except ValueError as exc:
                named = str(exc).split(" ", 1)[0]
                where = named if named in spec else "api_key_env" if "$" in str(exc) else "base_url" \
                    if "base_url" in str(exc) else None
                raise self.where.error(f"[policy]: {exc}", "policy", key=where) from None

        build()  # every setting checked, nothing read from the environment
        if key_env is not None:
            try:
                check_env_name(key_env)
            except ValueError as exc:
                raise self.where.error(f"[policy]: {exc}", "policy", key="api_key_env") from None
        url = base_url.strip().rstrip("/")
        if self.data.get("calls_model") is not True:
            raise self.where.error(f"[policy]: an {kind} policy sends the prompts to {url}; the plan must say "
                                   "calls_model = true", "policy", key="kind")
        if key_env is not None and key_over_plain_http(url):
            raise self.where.error(f"[policy]: refusing to send the API key in ${key_env} over plain http to "
                                   f"{check_base_url(url).hostname}, which is not this machine: use https, or a loopback "
                                   "address (an SSH tunnel to the server, for instance)", "policy",
                                   key="base_url" if "base_url" in spec else "api_key_env")
        if not self.allow_network:
            what = f"({cls.api}, model {model}) with the API key in ${key_env}" if key_env \
                else f"({cls.api}, model {model}, no API key)"
            raise self.where.error(
                f"this plan sends its prompts to {url} {what}; "
                "run it only if you trust that server, with --allow-network",
                "policy", key="base_url" if "base_url" in spec else "kind")
        return build(api_key_env=key_env)

    def grid(self, spec: dict) -> Grid:
        """[grid]: the world a grid agent walks (docs/plans.md, "Grid worlds"): drawn in
        ``rows``, or the ``episode``-th grid that ``random.Random(seed)`` draws."""
        known = {"rows", "seed", "episode", "size", "density"}
        for key in spec:
            if key not in known:
                raise self.where.error(f"[grid]: unknown key {key!r}; known: {', '.join(sorted(known))}", "grid", key=key)
        if ("rows" in spec) == ("seed" in spec):
            raise self.where.error("[grid]: give either rows (the grid drawn) or seed (a random grid), not "
                                   f"{'both' if 'rows' in spec else 'neither'}", "grid")
        if "rows" in spec:
            for key in ("episode", "size", "density"):
                if key in spec:
                    raise self.where.error(f"[grid]: {key} goes with seed, not with rows", "grid", key=key)
            rows = self.want(spec, "rows", list, "grid", label="[grid]")
            if not all(isinstance(row, str) for row in rows):
                raise self.where.error("[grid]: rows should be text, one string per row", "grid", key="rows")
            try:
                return Grid.from_rows(rows)
            except GridError as exc:
                raise self.where.error(f"[grid]: {exc}", "grid", key="rows") from None
        seed = self.want(spec, "seed", int, "grid", label="[grid]")
        episode = self.want(spec, "episode", int, "grid", default=1, label="[grid]")
        size = self.want(spec, "size", int, "grid", default=8, label="[grid]")
        density = self.want(spec, "density", (int, float), "grid", default=0.28, label="[grid]")
        if not 1 <= episode <= MAX_GRID_EPISODE:
            raise self.where.error(f"[grid]: episode must be 1 to {MAX_GRID_EPISODE:,}, got {episode}", "grid", key="episode")
        if not 2 <= size <= MAX_SIDE:
            raise self.where.error(f"[grid]: size must be 2 to {MAX_SIDE}, got {size}", "grid", key="size")
        try:
            # A flat budget: opening a plan takes a second at most, whatever it asks for.
            return random_grids(seed, episode, size, float(density), budget=MAX_CELLS_DRAWN)[-1]
        except GridError as exc:
            raise self.where.error(f"[grid]: {exc}", "grid", key="density") from None

    def grid_tools(self, tools: list[Tool], world: GridWorld) -> list[Tool]:
        for tool in world.tools():
            if any(other.name == tool.name for other in tools):
                raise self.where.error(f"[[tools]]: a tool named {tool.name!r}, which the [grid] world "
                                       "already gives", "tools", key="name")
        return tools + world.tools()

    def grid_policy(self, spec: dict) -> GridPolicy:
        """kind = "grid": one of the grid world's built-in agents, walking the plan's [grid]."""
        for key in spec:
            if key not in ("kind", "agent"):
                raise self.where.error(f"[policy]: unknown key {key!r} for a grid policy; known: agent, kind",
                                       "policy", key=key)
        agent = self.want(spec, "agent", str, "policy", label="[policy]")
        if agent not in GRID_AGENTS:
            raise self.where.error(f"[policy]: unknown grid agent {agent!r}; use one of {', '.join(GRID_AGENTS)}",
                                   "policy", key="agent")
        if "grid" not in self.data:
            raise self.where.error("[policy]: a grid agent walks a grid world: add a [grid] table", "policy", key="kind")
        return GridPolicy(agent)

    def memory(self, spec: dict) -> TieredMemory:
        """[memory]: the tiered memory (see docs/memory.md); a fresh one per run."""
        known = {"max_turns", "summary", "summary_max_chars", "recall_k", "recall_query",
                 "min_score", "embedding_dim", "index"}
        for key in spec:
            if key not in known:
                raise self.where.error(f"[memory]: unknown key {key!r}; known: {', '.join(sorted(known))}", "memory", key=key)
        max_turns = self.want(spec, "max_turns", int, "memory", default=4, label="[memory]")
        summary = self.want(spec, "summary", str, "memory", default="extractive", label="[memory]")
        summary_chars = self.want(spec, "summary_max_chars", int, "memory", default=400, label="[memory]")
        recall_k = self.want(spec, "recall_k", int, "memory", default=2, label="[memory]")
        recall_query = self.want(spec, "recall_query", str, "memory", default="last_turn", label="[memory]")
        min_score = self.want(spec, "min_score", (int, float), "memory", default=0.0, label="[memory]")
        dim = self.want(spec, "embedding_dim", int, "memory", default=256, label="[memory]")
        index = self.want(spec, "index", str, "memory", default="linear", label="[memory]")
        if index not in INDEXES:
            raise self.where.error(f"[memory]: index must be {' or '.join(INDEXES)}, got {index!r}", "memory", key="index")
        if index == "ann" and recall_k > 0 and not ann_available():
            raise self.where.error(f"[memory]: index = \"ann\" needs the usearch library, which is not installed: "
                                   f"{ANN_INSTALL_HINT}, or use index = \"linear\"", "memory", key="index")
        if summary != "off" and summary not in SUMMARIZERS:
            raise self.where.error(
                f"[memory]: summary must be {', '.join(SUMMARIZERS)} or off, got {summary!r}", "memory", key="summary")
        checks = (("max_turns", max_turns, 1), ("summary_max_chars", summary_chars, 1),
                  ("recall_k", recall_k, 0), ("embedding_dim", dim, 1))
        for key, value, least in checks:
            if value < least:
                raise self.where.error(f"[memory]: {key} must be at least {least}, got {value}", "memory", key=key)
        if dim > MAX_EMBEDDING_DIM:
            raise self.where.error(f"[memory]: embedding_dim must be at most {MAX_EMBEDDING_DIM}, got {dim}", "memory", key="embedding_dim")
        if recall_query not in RECALL_QUERIES:
            raise self.where.error(f"[memory]: recall_query must be one of {', '.join(RECALL_QUERIES)}, got {recall_query!r}",
                                   "memory", key="recall_query")
        if not -1 <= min_score <= 1:
            raise self.where.error(f"[memory]: min_score must be between -1 and 1, got {min_score}", "memory", key="min_score")
        try:
            return TieredMemory(
                max_turns=max_turns,
                summarizer=SUMMARIZERS[summary](summary_chars) if summary != "off" else None,
                embedder=HashedBagOfWords(dim),
                recall_k=recall_k,
                min_score=float(min_score),
                recall_query=recall_query,
                index=index,
            )
        except ValueError as exc:
            raise self.where.error(f"[memory]: {exc}", "memory") from None
