"""Thin wrappers that record what an official model SDK client says, as steps of an
``agentdbg.record`` run: ``agentdbg.integrations.openai`` (Chat Completions) and
``agentdbg.integrations.anthropic`` (Messages). Each needs its SDK installed
(``pip install "agentdbg[openai]"``, ``"agentdbg[anthropic]"``); agentdbg itself does not.
See docs/recorder.md.
"""
