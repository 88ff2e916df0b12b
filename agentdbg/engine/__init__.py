"""The deterministic ReAct engine: tools, action parsers, policies, guards and the loop.

Imports neither Textual nor Rich (a test checks it): it runs headless, in tests and in CI.
"""

from agentdbg.engine.agent import AgentRun, Outcome, ReActAgent, StepResult, Trace
from agentdbg.engine.events import SCHEMA_VERSION, Event, event_from_dict
from agentdbg.engine.guards import ErrorBudget, RepetitionGuard, StepBudget, TokenBudget
from agentdbg.engine.mock_tools import KeyValueStore, calculator, safe_eval, scripted, table_lookup
from agentdbg.engine.parsers import (
    Action,
    ActionPlan,
    FinalAnswer,
    ParallelCalls,
    parse_bracket_action,
    parse_colon_action,
    parse_json_action,
    parse_numbered_action,
    parse_plan_step,
    parse_script_step,
)
from agentdbg.engine.policies import (
    CallablePolicy,
    Policy,
    ScriptedOutputs,
    ScriptedPlan,
    ToyScript,
)
from agentdbg.engine.tokens import estimate_tokens
from agentdbg.engine.tools import Tool, ToolError, ToolRegistry

__all__ = [
    "SCHEMA_VERSION",
    "Action",
    "ActionPlan",
    "AgentRun",
    "CallablePolicy",
    "ErrorBudget",
    "Event",
    "FinalAnswer",
    "KeyValueStore",
    "ParallelCalls",
    "Outcome",
    "Policy",
    "ReActAgent",
    "RepetitionGuard",
    "ScriptedOutputs",
    "ScriptedPlan",
    "StepBudget",
    "StepResult",
    "TokenBudget",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToyScript",
    "Trace",
    "calculator",
    "estimate_tokens",
    "event_from_dict",
    "parse_bracket_action",
    "parse_colon_action",
    "parse_json_action",
    "parse_numbered_action",
    "parse_plan_step",
    "parse_script_step",
    "safe_eval",
    "scripted",
    "table_lookup",
]

# Memory tiers, rule policies and token estimation.
from agentdbg.engine.memory import BufferMemory, TieredMemory  # noqa: E402
from agentdbg.engine.memory_embedding import HashedBagOfWords  # noqa: E402
from agentdbg.engine.memory_semantic import Recalled, SemanticMemory  # noqa: E402
from agentdbg.engine.memory_summary import (  # noqa: E402
    ExtractiveSummarizer,
    TruncatingSummarizer,
    summarize_memory,
)
from agentdbg.engine.policies import Rule, RulePolicy  # noqa: E402
from agentdbg.engine.tokens import from_tokenizer  # noqa: E402

__all__ += [
    "BufferMemory",
    "ExtractiveSummarizer",
    "HashedBagOfWords",
    "Recalled",
    "Rule",
    "RulePolicy",
    "SemanticMemory",
    "TieredMemory",
    "TruncatingSummarizer",
    "from_tokenizer",
    "summarize_memory",
]

# Policies that call a real model over HTTP (standard library only).
from agentdbg.engine.model_policies import AnthropicPolicy, ModelCallError, OpenAIChatPolicy  # noqa: E402

__all__ += ["AnthropicPolicy", "ModelCallError", "OpenAIChatPolicy"]

# Approval of dangerous calls, and operation keys that run a call at most once.
from agentdbg.engine.approval import ApprovalRequest, Decision  # noqa: E402
from agentdbg.engine.journal import OperationJournal  # noqa: E402
from agentdbg.engine.mock_tools import pretend  # noqa: E402
from agentdbg.engine.tools import dangerous  # noqa: E402

__all__ += ["ApprovalRequest", "Decision", "OperationJournal", "dangerous", "pretend"]

# The words the loop writes itself (error observations, retry prompts, end of budget).
from agentdbg.engine.texts import TEXTS, LoopTexts, get_texts  # noqa: E402

__all__ += ["TEXTS", "LoopTexts", "get_texts"]
