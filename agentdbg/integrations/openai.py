"""Record an OpenAI Chat Completions loop: ``client = wrap(OpenAI(), rec)``.

Each ``client.chat.completions.create(...)`` records:

- before the request: the tool results it carries (``role: "tool"`` messages answering a
  call that has no observation yet) as observations; the request's ``tools`` as the run's
  tool list and its first user message as the task, when the recorder has none yet;
- after the response (its first choice): the message's tool calls, one step each in order,
  the message's text as the first one's thought and the usage as its tokens; a message
  with text and no tool call is a reply (the final answer if the run ends next); arguments
  that are not a JSON object are a parse error.

Results run through ``rec.call(tool_call)`` or recorded with ``rec.observe(text,
error=True, id=...)`` before the next request keep their error flag: a tool message only
carries text. ``stream=True`` is refused (whole responses are recorded). Works with
``OpenAI`` and ``AsyncOpenAI`` (and compatible servers through ``base_url``).
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
    """``client`` (an ``openai.OpenAI`` or ``AsyncOpenAI``) recording into ``recorder``;
    every other attribute is the client's own."""
    return _Client(client, recorder)


def tool_definitions(tools: Any) -> list[dict]:
    """The ``tools=`` list for ``chat.completions.create``, from a recorder, a registry,
    or a list of tools and plain functions (described from their type hints)."""
    return [{"type": "function", "function": {"name": tool.name, "description": tool.description,
                                              "parameters": tool.json_schema()}}
            for tool in tools_of(tools)]


class _Client(Delegate):
    def __init__(self, client: Any, recorder: Recorder):
        super().__init__(client)
        object.__setattr__(self, "_recorder", recorder)

    @property
    def chat(self) -> Any:
        return _Chat(self._wrapped.chat, self._recorder)

    def with_options(self, *args: Any, **kwargs: Any) -> Any:
        return _Client(self._wrapped.with_options(*args, **kwargs), self._recorder)


class _Chat(Delegate):
    def __init__(self, chat: Any, recorder: Recorder):
        super().__init__(chat)
        object.__setattr__(self, "_recorder", recorder)

    @property
    def completions(self) -> Any:
        return _Completions(self._wrapped.completions, self._recorder)


class _Completions(Delegate):
    def __init__(self, completions: Any, recorder: Recorder):
        super().__init__(completions)
        object.__setattr__(self, "_recorder", recorder)

    @property
    def create(self) -> Any:
        recorder = self._recorder
        return recording(self._wrapped.create, lambda request: record_request(recorder, request),
                         lambda response: record_response(recorder, response))


def record_request(recorder: Recorder, request: dict) -> None:
    """What a Chat Completions request tells the recorder (see the module's docstring)."""
    if request.get("stream"):
        raise ValueError("agentdbg records whole responses; stream=True is not supported")
    messages = request.get("messages") or []
    if not recorder.started:
        specs = [spec_from_schema(get(get(t, "function"), "name"), get(get(t, "function"), "description"),
                                  get(get(t, "function"), "parameters"))
                 for t in request.get("tools") or []]
        recorder.add_tool_specs(s for s in specs if s is not None)
        if not recorder.task:
            recorder.task = first_user_text(messages)
    waiting = {step.id for step in recorder.waiting if step.id}
    for message in messages:
        call_id = get(message, "tool_call_id")
        if get(message, "role") == "tool" and call_id in waiting:
            waiting.discard(call_id)
            recorder.observe(text_parts(get(message, "content")), id=call_id)


def record_response(recorder: Recorder, response: Any) -> None:
    """A Chat Completions response's first choice as steps (see the module's docstring)."""
    choices = get(response, "choices") or []
    tokens = get(response, "usage")  # read by usage_tokens: total, or prompt and completion
    message = get(choices[0], "message") if choices else None
    text = text_parts(get(message, "content")) or (get(message, "refusal") or "")
    calls = list(get(message, "tool_calls") or [])
    if calls:
        recorder.actions(calls, thought=text, tokens=tokens)
    elif text:
        recorder.reply(text, tokens=tokens)
    else:
        reason = get(choices[0], "finish_reason") if choices else "no choices"
        recorder.parse_error(f"the model returned neither text nor a tool call (finish_reason: {reason})",
                             tokens=tokens)

