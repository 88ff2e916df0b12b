"""The system prompt of a model policy: the run's tools (name, description, parameters and
their types) and the action format the loop parses, and the JSON schemas that native tool
calling sends instead of text instructions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "number": "number",
               "bool": "boolean", "object": "object", "array": "array"}
_ONE_ARGUMENT = ("The argument is the value of the tool's one parameter, as plain text without quotes. "
                 "For example:\n{example}\nA tool with several parameters cannot be called in this format.")
_STEP_FORMATS = {
    "bracket": ("Thought: <your reasoning>\nAction: <tool>[<argument>]",
                "Thought: <your reasoning>\nFinal Answer: <the answer>", _ONE_ARGUMENT),
    "colon": ("Thought: <your reasoning>\nAction: <tool>: <argument>",
              "Thought: <your reasoning>\nAnswer: <the answer>", _ONE_ARGUMENT),
    "json": ("Thought: <your reasoning>\nAction: <tool>\nAction Input: <a JSON object of the tool's parameters>",
             "Thought: <your reasoning>\nFinal Answer: <the answer>",
             "Action Input is one JSON object with every parameter of the tool. For example:\n{example}"),
}
_PLACEHOLDERS = {"str": '"..."', "int": "0", "float": "0.5", "number": "0.5", "bool": "true", "object": "{}",
                 "array": "[]"}


def _example(tools: Sequence[dict[str, Any]], format: str) -> str:
    """An action in ``format`` calling one of the tools (in json, the one with the most
    parameters; otherwise one with a single parameter), its arguments as placeholders."""
    if not tools:
        return "Action: tool[argument]"
    if format == "json":
        tool = max(tools, key=lambda t: len(t.get("params") or {}))
    else:
        tool = next((t for t in tools if len(t.get("params") or {}) == 1), tools[0])
    name, params = tool.get("name", "tool"), dict(tool.get("params") or {})
    if format == "json":
        fields = ", ".join(f'"{param}": {_PLACEHOLDERS.get(str(kind), "...")}' for param, kind in params.items())
        return f"Action: {name}\nAction Input: {{{fields}}}"
    argument = f"<{next(iter(params), 'argument')}>"
    return f"Action: {name}: {argument}" if format == "colon" else f"Action: {name}[{argument}]"


def describe_tool(spec: dict[str, Any]) -> str:
    """One line of the system prompt's tool list: ``- name(param: type, ...): description``."""
    params = ", ".join(f"{name}: {kind}" for name, kind in (spec.get("params") or {}).items())
    line = f"- {spec.get('name', '?')}({params})"
    if spec.get("description"):
        line += f": {' '.join(str(spec['description']).split())}"
    if spec.get("dangerous"):
        line += " (irreversible: call it only when you are sure)"
    return line


def system_prompt(tools: Sequence[dict[str, Any]], format: str = "bracket", tool_calling: str = "text",
                  instructions: str = "") -> str:
    """The system prompt: the tools (name, description, parameters and their types) and the
    action format the loop parses. ``tools`` are registry specs (``ToolRegistry.specs()``)."""
    if format not in _STEP_FORMATS:
        raise ValueError(f"a model policy writes bracket, colon or json actions, not {format!r}")
    step, final, note = _STEP_FORMATS[format]
    listing = "\n".join(describe_tool(spec) for spec in tools) or "(none: answer from what you know)"
    parts = ["You answer a question by reasoning step by step and using tools. Each reply is exactly one step.",
             f"Tools (any other name is an error):\n{listing}"]
    if tool_calling == "native":
        parts.append("To act, call exactly one of these tools with the tool-calling interface, after a "
                     "sentence of reasoning. The program runs it and adds its result to the transcript "
                     f"as a line \"Observation: <result>\".\nWhen you know the answer, call no tool and reply:\n{final}")
    else:
        parts.append(f"Write each step as:\n{step}\n\n{note.format(example=_example(tools, format))}")
        parts.append("Stop after the Action: the program runs the tool and adds its result to the transcript "
                     "as a line \"Observation: <result>\". Never write an Observation yourself.\n"
                     f"When you know the answer, write:\n{final}")
    parts.append("The user message holds the question and the transcript so far. Reply with the next step only.")
    if instructions.strip():
        parts.append(instructions.strip())
    return "\n\n".join(parts)


def json_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters as the JSON schema native tool calling wants."""
    params = dict(spec.get("params") or {})
    return {"type": "object",
            "properties": {name: {"type": _JSON_TYPES.get(str(kind), "string")} for name, kind in params.items()},
            "required": list(params), "additionalProperties": False}
