"""Pausing a running agent from the debugger: a local channel beside the trace.

An agent recorded with ``agentdbg.record(..., attach=True)`` (or ``agentdbg record PLAN
--attach``) listens on a Unix domain socket beside its trace, ``FILE.agentdbg.sock``
(mode 0600; never a network port). A debugger open on the trace connects to it: after
each step is flushed the agent says so and waits for the debugger's answer, ``go`` or
``pause``; a paused agent waits for ``go`` (the user's ``c`` or ``n``), for its
``pause_timeout``, or for the debugger to go away, and then goes on. Breakpoints are
evaluated by the debugger, on the step it reads from the file: the agent needs no filter
code. See ``protocol`` for the messages, ``agent`` for the agent's side and ``debugger``
for the debugger's.
"""
