"""LangChain / LangSmith run trees.

A run (LangSmith ``Run``, langchain-core's tracer ``Run``, ``RunTree``) is one span of work:
``run_type`` (``chain``, ``llm``, ``chat_model``, ``tool``, ``retriever``, ...), ``inputs``,
``outputs``, ``error``, ``parent_run_id``, ``trace_id``, ``dotted_order``, children nested in
``child_runs``. Accepted containers: a run tree (one root with its children nested), the
SDK's upload batches (``{"post": [...], "patch": [...]}``: a patch finishes the run with
its id, or with its ``dotted_order``), and flat lists of runs (a JSON array or JSON Lines),
linked by ``parent_run_id`` or ``dotted_order``.

Each root run is an agentdbg run; the runs under it are taken in execution order
(``dotted_order``, else start time). ``llm`` / ``chat_model`` runs are model turns (their
output message: text and tool calls; their usage, once per run), ``tool`` runs the calls'
replies (``outputs.output``; ``error`` makes it an error), the root's inputs and outputs the
task and the answer. Messages are read in every form LangChain writes them: serialized
(``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``), the older
``{"type": "ai", "data": {...}}``, and chat ``{"role", "content"}``. Other runs (chains,
prompts, parsers, retrievers) are kept raw.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    Source,
    as_source,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import Record, is_json_lines, load_json, load_json_lines
from agentdbg.importers.openai_chat import tools_from_definitions
from agentdbg.importers.sniffing import outline

NAME = "langchain"
DESCRIPTION = "LangChain / LangSmith runs: run trees, upload batches (post / patch), lists of runs"

RUN_TYPES = {"llm", "chat_model", "chain", "tool", "retriever", "prompt", "parser", "embedding"}
MODEL_RUNS = {"llm", "chat_model"}
_RUN_TYPE_PATHS = (("run_type",), ("*", "run_type"), ("post", "*", "run_type"), ("patch", "*", "run_type"),
                   ("runs", "*", "run_type"))
_ROLES = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system", "function": "function",
          "developer": "system"}
_LC_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "AIMessageChunk": "ai", "ToolMessage": "tool",
               "SystemMessage": "system", "FunctionMessage": "function", "ChatMessage": "chat"}
_TASK_KEYS = ("input", "question", "query", "prompt", "task", "text", "topic")
_ANSWER_KEYS = ("output", "answer", "result", "final_answer", "response", "text")
_MAX_DEPTH = 200  # nesting of child_runs beyond this is damage


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    run_types = set().union(*(shape.strings(*p) for p in _RUN_TYPE_PATHS)) & RUN_TYPES
    if run_types:
        return True, f"LangChain runs ({', '.join(sorted(run_types))})"
    if shape.has("post") and shape.has("patch") and (shape.has("post", "*", "dotted_order")
                                                     or shape.has("patch", "*", "dotted_order")):
        return True, "LangSmith upload batches (post / patch)"
    return False, "no runs with a 'run_type'"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    records = load_json_lines(src) if is_json_lines(src.text) else [Record(load_json(src), 0)]
    runs = _collect(src, records)
    result = ImportResult(problems=src.problems)
    for root, order in _traces(runs):
        reader = _TraceReader(src, root, order)
        result.runs.append(reader.read())
        result.raw_count += reader.builder.raw_count
    return result


# --- runs from the file ------------------------------------------------------------------

class _Run:
    def __init__(self, data: dict, index: int, nested_in: _Run | None = None):
        self.data = data  # without child_runs: what a raw record keeps
        self.index = index  # position in the file
        self.nested_in = nested_in  # the run whose child_runs held this one
        self.children: list[_Run] = []
        self.parent: _Run | None = None

    @property
    def id(self) -> str:
        return text_of(self.data.get("id"))

    @property
    def type(self) -> str:
        return text_of(self.data.get("run_type"))

    @property
    def name(self) -> str:
        return text_of(self.data.get("name"))

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def mapping(self, key: str) -> dict:
        value = self.data.get(key)
        return value if isinstance(value, dict) else {}

    def sort_key(self) -> tuple:
        return (text_of(self.get("dotted_order")), _seconds(self.get("start_time")), self.index)


def _collect(src: Source, records: list[Record]) -> list[_Run]:
    """Every run in the file, patches merged into the runs they finish."""
    runs: list[_Run] = []
    patches: list[tuple[dict, int | None]] = []

    def add(value: Any, line: int | None) -> None:
        stack: list[tuple[Any, _Run | None, int]] = [(value, None, 0)]
        while stack:
            item, above, depth = stack.pop()
            if not isinstance(item, dict):
                src.problem(f"a JSON {type(item).__name__} where a run should be; skipped", line)
                continue
            data = {k: v for k, v in item.items() if k != "child_runs"}
            run = _Run(data, len(runs), above)
            runs.append(run)
            children = item.get("child_runs")
            if isinstance(children, list) and children:
                if depth >= _MAX_DEPTH:
                    src.problem(f"runs nested more than {_MAX_DEPTH} deep; the deeper ones are skipped", line)
                    continue
                stack.extend((child, run, depth + 1) for child in reversed(children))

    for record in records:
        value, line = record.value, record.line or None
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and ("post" in item or "patch" in item) and "run_type" not in item:
                for key in ("post", "patch"):
                    batch = item.get(key)
                    for run in batch if isinstance(batch, list) else []:
                        if key == "post":
                            add(run, line)
                        else:
                            patches.append((run, line))
            elif isinstance(item, dict) and isinstance(item.get("runs"), list) and "run_type" not in item:
                for run in item["runs"]:
                    add(run, line)
            else:
                add(item, line)
    by_id = {run.id: run for run in runs if run.id}
    by_order = {text_of(run.get("dotted_order")): run for run in runs if run.get("dotted_order")}
    for patch, line in patches:
        if not isinstance(patch, dict):
            src.problem("a patch that is not an object; skipped", line)
            continue
        target = by_id.get(text_of(patch.get("id"))) or by_order.get(text_of(patch.get("dotted_order")))
        if target is None:
            add(patch, line)  # a patch for a run this file does not post: the run as patched
            continue
        target.data.update({k: v for k, v in patch.items() if v is not None and k != "child_runs"})
    return runs


def _traces(runs: list[_Run]) -> list[tuple[_Run, list[_Run]]]:
    """(root, its runs in execution order) for each root, roots in start order."""
    by_id = {run.id: run for run in runs if run.id}
    by_order = {text_of(run.get("dotted_order")): run for run in runs if run.get("dotted_order")}
    for run in runs:
        parent = by_id.get(text_of(run.get("parent_run_id"))) or run.nested_in
        order = text_of(run.get("dotted_order"))
        if parent is None and "." in order:
            parent = by_order.get(order.rsplit(".", 1)[0])
        if parent is not None and parent is not run and not _is_below(parent, run):
            run.parent = parent
            parent.children.append(run)
    roots = sorted((run for run in runs if run.parent is None), key=_Run.sort_key)
    traces = []
    for root in roots:
        order: list[_Run] = []
        stack = [root]
        while stack:
            run = stack.pop()
            order.append(run)
            stack.extend(sorted(run.children, key=_Run.sort_key, reverse=True))
        traces.append((root, order))
    return traces


def _is_below(node: _Run, run: _Run) -> bool:
    """``node`` already hangs under ``run`` (a cycle in damaged links)."""
    seen = set()
    while node is not None and id(node) not in seen:
        if node is run:
            return True
        seen.add(id(node))
        node = node.parent
    return False


def _seconds(value: Any) -> float:
    """A start time for ordering: ISO 8601, or epoch milliseconds (the JS SDK)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1000 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return 0.0
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return 0.0


# --- messages ----------------------------------------------------------------------------

def message(value: Any) -> dict | None:
    """A LangChain message in any of its written forms as one dict: its fields and
    ``type`` (human, ai, tool, system, ...)."""
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        fields = dict(value["kwargs"])
        names = value.get("id") if isinstance(value.get("id"), list) else []
        kind = fields.get("type") or _LC_CLASSES.get(text_of(names[-1]) if names else "", "")
        return {**fields, "type": text_of(kind)}
    if isinstance(value.get("data"), dict) and isinstance(value.get("type"), str):
        return {**value["data"], "type": value["type"]}
    if isinstance(value.get("role"), str):
        return {**value, "type": _ROLES.get(value["role"], value["role"])}
    if isinstance(value.get("type"), str) and "content" in value:
        return value
    return None


def _messages(value: Any) -> list[dict]:
    """``inputs.messages``: a list of messages, or a list of such lists (a batch)."""
    if not isinstance(value, list):
        return []
    flat = [m for item in value for m in (item if isinstance(item, list) else [item])]
    return [m for m in (message(item) for item in flat) if m is not None]


def content_text(content: Any) -> str:
    """Message content as text: a string, or its parts (see ``content_parts``)."""
    return "\n".join(t for t in content_parts(content)[1] if t)


def content_parts(content: Any) -> tuple[list[str], list[str]]:
    """(reasoning, text) of message content: a string, or its parts (text; thinking and
    reasoning parts are reasoning; tool_use parts are the message's tool calls; others as
    ``[type]``)."""
    if isinstance(content, str):
        return [], [content]
    if not isinstance(content, list):
        return [], [text_of(content)]
    reasoning, texts = [], []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if isinstance(part.get("thinking"), str):
                reasoning.append(part["thinking"])
            elif kind == "reasoning":
                reasoning.append(content_text(part.get("summary")) if "summary" in part else text_of(part.get("text")))
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind not in ("tool_use", "tool_call", "function_call"):
                texts.append(f"[{text_of(kind) or 'part'}]")
    return reasoning, texts


def _calls(ai: dict) -> list[Call]:
    calls = []
    made = ai.get("tool_calls")
    extra = ai.get("additional_kwargs") if isinstance(ai.get("additional_kwargs"), dict) else {}
    if not made and isinstance(extra.get("tool_calls"), list):
        made = extra["tool_calls"]  # older messages: OpenAI's form, in additional_kwargs
    for call in made if isinstance(made, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else None
        if function is not None:
            calls.append(Call(text_of(function.get("name")) or "?", function.get("arguments"), text_of(call.get("id"))))
        else:
            calls.append(Call(text_of(call.get("name")) or "?", call.get("args", call.get("arguments")),
                              text_of(call.get("id"))))
    invalid = ai.get("invalid_tool_calls")
    for call in invalid if isinstance(invalid, list) else []:
        if isinstance(call, dict):  # args as the model wrote them, not valid JSON
            calls.append(Call(text_of(call.get("name")) or "?", text_of(call.get("args")), text_of(call.get("id"))))
    legacy = extra.get("function_call")
    if not calls and isinstance(legacy, dict):
        calls.append(Call(text_of(legacy.get("name")) or "?", legacy.get("arguments")))
    return calls


def _usage(usage: Any) -> int | None:
    """A usage record's total: ``total_tokens``, else input + output (or prompt + completion)."""
    if not isinstance(usage, dict):
        return None
    total = token_count(usage.get("total_tokens"))
    if total is not None:
        return total
    for keys in (("input_tokens", "output_tokens"), ("prompt_tokens", "completion_tokens")):
        counts = [n for n in (token_count(usage.get(k)) for k in keys) if n is not None]
        if counts:
            return sum(counts)
    return None


def _first_line(text: str) -> str:
    """An error's gist: its first line, without the traceback LangChain glues to it."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line.split("Traceback (most recent call last):")[0].strip() or line


# --- one trace ---------------------------------------------------------------------------

class _TraceReader:
    def __init__(self, src: Source, root: _Run, order: list[_Run]):
        self.src = src
        self.root = root
        self.order = order
        self.builder = RunBuilder(name=root.name, source=src.path, policy="recorded: LangChain runs")
        self.chat = ChatAssembler(self.builder, src, "langchain")
        self.model = ""
        self.text_turn: StepDraft | None = None
        self.text_said = ""  # that turn's text, without its reasoning

    def read(self) -> list:
        root, builder = self.root, self.builder
        builder.task = _inputs_text(root.mapping("inputs"))
        for run in self.order:
            inside_tool = self._inside_tool(run)
            if inside_tool is not None:
                builder.raw("langchain run", run.data, f"{run.type} run {run.name!r} inside tool {inside_tool.name!r}",
                            current=True)
            elif run.type in MODEL_RUNS:
                self._model_turn(run)
            elif run.type == "tool":
                self._tool(run)
            elif run is not root:
                builder.raw("langchain run", run.data, f"{run.type or 'untyped'} run {run.name!r}", current=True)
        outcome, message = None, ""
        error = text_of(root.get("error"))
        if error or root.get("status") == "error":
            outcome, message = "error", _first_line(error) or "the run failed"
        elif root.type not in MODEL_RUNS:
            self._answer(_outputs_text(root.mapping("outputs")))
        self.chat.finish()
        if self.model:
            builder.policy = f"recorded: {self.model} (LangChain runs)"
        return builder.build(outcome=outcome, message=message)

    def _inside_tool(self, run: _Run) -> _Run | None:
        node = run.parent
        while node is not None:
            if node.type == "tool":
                return node
            node = node.parent
        return None

    def _answer(self, answer: str) -> None:
        """The root's output: the last text turn when it says the same or ends with it
        (a ReAct ``Final Answer:`` line), else a step of its own."""
        if not answer:
            return
        steps = self.builder.steps
        last = steps[-1] if steps else None
        if last is not None and last.tool is None and last.parse_error is None and last.answer is None:
            said = self.text_said if last is self.text_turn else last.thought
            if said.strip() == answer.strip():
                return
            if answer.strip() in last.thought:
                last.answer = answer
                return
        self.chat.assistant([answer], [])

    # model turns

    def _model_turn(self, run: _Run) -> None:
        builder, chat = self.builder, self.chat
        inputs, outputs, extra = run.mapping("inputs"), run.mapping("outputs"), run.mapping("extra")
        sent = _messages(inputs.get("messages"))
        if not builder.task:
            builder.task = next((content_text(m.get("content")) for m in sent if m.get("type") == "human"), "") or (
                text_of(inputs["prompts"][0]) if isinstance(inputs.get("prompts"), list) and inputs["prompts"] else "")
        for sent_message in sent:  # replies no tool run recorded
            call_id = text_of(sent_message.get("tool_call_id"))
            if sent_message.get("type") == "tool" and call_id and chat.waiting(call_id):
                chat.reply(call_id, content_text(sent_message.get("content")))
        params = extra.get("invocation_params") if isinstance(extra.get("invocation_params"), dict) else {}
        for spec in tools_from_definitions(params.get("tools") or params.get("functions")):
            builder.add_tool(spec)
        ai, others = _generation(outputs)
        metadata = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
        response = ai.get("response_metadata") if ai and isinstance(ai.get("response_metadata"), dict) else {}
        llm_output = outputs.get("llm_output") if isinstance(outputs.get("llm_output"), dict) else {}
        self.model = self.model or text_of(
            metadata.get("ls_model_name") or params.get("model") or params.get("model_name")
            or response.get("model_name") or llm_output.get("model_name") or outputs.get("model"))
        tokens = self._tokens(run, ai, outputs, llm_output)
        error = text_of(run.get("error"))
        if error:  # the model call itself failed
            step = builder.step(error_kind="policy", error_message=_first_line(error), tokens=tokens)
            step.observation, step.observation_error = error, True
            self.text_turn = None
            return
        reasoning, texts = content_parts(ai.get("content")) if ai else ([], [])
        steps = chat.assistant(texts, _calls(ai) if ai else [], tokens, reasoning=reasoning)
        for other in others:
            builder.raw("langchain generation", other, f"another choice of {run.name!r}", current=True,
                        step=steps[0] if steps else None)
        self.text_turn = steps[0] if len(steps) == 1 and steps[0].tool is None and steps[0].parse_error is None else None
        self.text_said = "\n".join(t for t in texts if t and t.strip())

    @staticmethod
    def _tokens(run: _Run, ai: dict | None, outputs: dict, llm_output: dict) -> int | None:
        """Once per model run: the message's usage, else the run's other records of it."""
        for usage in ((ai or {}).get("usage_metadata"), llm_output.get("token_usage"), llm_output.get("usage"),
                      outputs.get("usage_metadata"), outputs.get("usage")):
            tokens = _usage(usage)
            if tokens is not None:
                return tokens
        return _usage({k: run.get(k) for k in ("total_tokens", "prompt_tokens", "completion_tokens")})

    # tools

    def _tool(self, run: _Run) -> None:
        builder, chat = self.builder, self.chat
        name = run.name or "?"
        serialized = run.mapping("serialized")
        if serialized.get("description"):
            builder.add_tool(tool_spec(name, text_of(serialized.get("description"))))
        arguments, free = _tool_arguments(run.get("inputs"))
        call_id = text_of(run.mapping("extra").get("tool_call_id"))
        error = text_of(run.get("error"))
        text, failed = _tool_output(run.get("outputs"))
        if error:
            text, failed = error, True
        step: StepDraft | None
        if call_id and chat.waiting(call_id):
            step = chat.reply(call_id, text, error=failed)
        elif not call_id and chat.waiting_named(name):  # no id: the oldest call to this tool
            step = chat.reply("", text, error=failed, name=name)
        else:
            call = Call(name, arguments, call_id, freeform=free)
            turn = self.text_turn
            if turn is not None and builder.steps and builder.steps[-1] is turn:
                builder.steps.pop()  # the model wrote this call as text (a ReAct agent)
                step = chat.call(call, turn.thought, turn.tokens)
                step.raw[:0] = turn.raw
            else:
                step = chat.call(call)
            chat.close(step)
            step.reply(text, failed or step.parse_error is not None, call_id)
        self.text_turn = None
        if failed and step is not None:
            first = _first_line(text)
            step.error_kind = "timeout" if "timeout" in first.lower() else "exception"
            step.error_message = first or "the tool failed"


def _generation(outputs: dict) -> tuple[dict | None, list]:
    """The model's output message (as ``message`` gives it) and the other candidates."""
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:
        batch = generations[0] if isinstance(generations[0], list) else generations
        candidates = [g for g in batch if isinstance(g, dict)]
        if candidates:
            first = candidates[0]
            ai = message(first.get("message")) or {"type": "ai", "content": text_of(first.get("text"))}
            return ai, candidates[1:]
    choices = outputs.get("choices")  # a traced OpenAI call: the API's response
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        ai = message(choices[0].get("message"))
        if ai is not None:
            return ai, [c for c in choices[1:] if isinstance(c, dict)]
    for key in ("output", "message", "generation"):
        found = message(outputs.get(key))
        if found is not None:
            return found, []
    if isinstance(outputs.get("output"), str):
        return {"type": "ai", "content": outputs["output"]}, []
    return None, []


def _tool_arguments(inputs: Any) -> tuple[Any, bool]:
    """(arguments, whether they are free text) from a tool run's inputs: the argument
    dict, or ``{"input": ...}`` holding a dict or one string."""
    if not isinstance(inputs, dict):
        return (text_of(inputs), True) if inputs is not None else ({}, False)
    if set(inputs) == {"input"}:
        value = inputs["input"]
        if isinstance(value, dict):
            return value, False
        return text_of(value), True
    return inputs, False


def _tool_output(outputs: Any) -> tuple[str, bool]:
    """(the tool's reply, whether it says it failed)."""
    if not isinstance(outputs, dict):
        return text_of(outputs), False
    value = outputs.get("output", outputs if outputs else None)
    reply = message(value)
    if reply is not None and reply.get("type") == "tool":
        return content_text(reply.get("content")), reply.get("status") == "error"
    return text_of(value), False


def _inputs_text(inputs: dict) -> str:
    for key in _TASK_KEYS:
        if isinstance(inputs.get(key), str):
            return inputs[key]
    sent = _messages(inputs.get("messages"))
    human = next((content_text(m.get("content")) for m in sent if m.get("type") == "human"), "")
    if human:
        return human
    strings = [v for v in inputs.values() if isinstance(v, str)]
    return strings[0] if len(strings) == 1 else ""


def _outputs_text(outputs: dict) -> str:
    for key in _ANSWER_KEYS:
        value = outputs.get(key)
        if isinstance(value, str):
            return value
        found = message(value)
        if found is not None and found.get("type") == "ai":
            return content_text(found.get("content"))
    sent = _messages(outputs.get("messages"))  # a LangGraph state: the last AI message
    last_ai = next((m for m in reversed(sent) if m.get("type") == "ai"), None)
    return content_text(last_ai.get("content")) if last_ai else ""
