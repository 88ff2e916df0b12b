"""Record an Anthropic Messages loop: ``client = wrap(Anthropic(), rec)``.

Each ``client.messages.create(...)`` records:

- before the request: the ``tool_result`` blocks it carries (answering a ``tool_use`` that
  has no observation yet) as observations, with their ``is_error`` flag; the request's
  ``tools`` as the run's tool list and its first user message as the task, when the
  recorder has none yet;
- after the response: its ``tool_use`` blocks, one step each in order, its text (and
  thinking) as the first one's thought, its usage (input, output and cache tokens) as its
  tokens; a response with text and no ``tool_use`` is a reply (the final answer if the run
  ends next).

``stream=True`` is refused (whole responses are recorded). Works with ``Anthropic`` and
``AsyncAnthropic``.
"""

from __future__ import annotations

from typing import Any

from agentdbg.integrations._common import (
    Delegate,
    first_user_text,
    get,
    recording,
    spec_from_schema,
    text_parts,
    tools_of,
)
from agentdbg.recorder import Recorder


def wrap(client: Any, recorder: Recorder) -> Any:
    """``client`` (an ``anthropic.Anthropic`` or ``AsyncAnthropic``) recording into
    ``recorder``; every other attribute is the client's own."""
    return _Client(client, recorder)


def tool_definitions(tools: Any) -> list[dict]:
    """The ``tools=`` list for ``messages.create``, from a recorder, a registry, or a list
    of tools and plain functions (described from their type hints)."""
    return [{"name": tool.name, "description": tool.description, "input_schema": tool.json_schema()}
            for tool in tools_of(tools)]


class _Client(Delegate):
    def __init__(self, client: Any, recorder: Recorder):
        super().__init__(client)
        object.__setattr__(self, "_recorder", recorder)

    @property
    def messages(self) -> Any:
        return _Messages(self._wrapped.messages, self._recorder)

    def with_options(self, *args: Any, **kwargs: Any) -> Any:
        return _Client(self._wrapped.with_options(*args, **kwargs), self._recorder)


class _Messages(Delegate):
    def __init__(self, messages: Any, recorder: Recorder):
        super().__init__(messages)
        object.__setattr__(self, "_recorder", recorder)

    @property
    def create(self) -> Any:
        recorder = self._recorder
        return recording(self._wrapped.create, lambda request: record_request(recorder, request),
                         lambda response: record_response(recorder, response))


def record_request(recorder: Recorder, request: dict) -> None:
    """What a Messages request tells the recorder (see the module's docstring)."""
    if request.get("stream"):
        raise ValueError("agentdbg records whole responses; stream=True is not supported")
    messages = request.get("messages") or []
    if not recorder.started:
        specs = [spec_from_schema(get(t, "name"), get(t, "description"), get(t, "input_schema"))
                 for t in request.get("tools") or []]
        recorder.add_tool_specs(s for s in specs if s is not None)
        if not recorder.task:
            recorder.task = first_user_text(messages)
    waiting = {step.id for step in recorder.waiting if step.id}
    for message in messages:
        content = get(message, "content")
        if get(message, "role") != "user" or isinstance(content, str):
            continue
        for block in content or ():
            call_id = get(block, "tool_use_id")
            if get(block, "type") == "tool_result" and call_id in waiting:
                waiting.discard(call_id)
                result = get(block, "content")
                text = result if isinstance(result, str) else text_parts(result)
                recorder.observe(text, error=bool(get(block, "is_error")), id=call_id)


def record_response(recorder: Recorder, response: Any) -> None:
    """A Messages response as steps (see the module's docstring)."""
    texts: list[str] = []
    calls: list[Any] = []
    for block in get(response, "content") or []:
        kind = get(block, "type")
        if kind == "text" and get(block, "text"):
            texts.append(get(block, "text"))
        elif kind == "thinking" and get(block, "thinking"):
            texts.append(get(block, "thinking"))
        elif kind == "tool_use":
            calls.append(block)
    tokens = get(response, "usage")
    text = "\n".join(texts)
    if calls:
        recorder.actions(calls, thought=text, tokens=tokens)
    elif text:
        recorder.reply(text, tokens=tokens)
    else:
        reason = get(response, "stop_reason")
        recorder.parse_error(f"the model returned neither text nor a tool call (stop_reason: {reason})",
                             tokens=tokens)
