"""What the headless commands share: opening input, walking runs as they are indexed,
rendering steps and states with rich (as plain ``Text``, never markup), and JSON shapes.

Every string from a run is untrusted: it goes through ``agentdbg.text.sanitize`` and into
``rich.text.Text`` objects, so neither markup nor terminal control sequences in a trace can
reach the terminal; ``agentdbg.cli.terminal`` checks all that is written once more.
JSON output escapes what could fool a terminal (``agentdbg.text.escape_json``).

The work is split by job: ``inputs`` (opening files, walking runs), ``problems`` (warnings
and failures), ``json_output`` and ``text_output``; this module names all of it.
"""

from __future__ import annotations

from agentdbg.cli.inputs import (
    MAX_RUNS as MAX_RUNS,
)
from agentdbg.cli.inputs import (  # noqa: F401
    InputError as InputError,
)
from agentdbg.cli.inputs import (
    _report_unread_runs as _report_unread_runs,
)
from agentdbg.cli.inputs import (
    add_input_arguments as add_input_arguments,
)
from agentdbg.cli.inputs import (
    iter_records as iter_records,
)
from agentdbg.cli.inputs import (
    iter_runs as iter_runs,
)
from agentdbg.cli.inputs import (
    no_runs as no_runs,
)
from agentdbg.cli.inputs import (
    open_input as open_input,
)
from agentdbg.cli.inputs import (
    runs_left_unread as runs_left_unread,
)
from agentdbg.cli.inputs import (
    wait_for_index as wait_for_index,
)
from agentdbg.cli.inputs import (
    wait_for_runs as wait_for_runs,
)
from agentdbg.cli.inputs import (
    wait_for_step as wait_for_step,
)
from agentdbg.cli.json_output import (  # noqa: F401
    dumps as dumps,
)
from agentdbg.cli.json_output import (
    info_dict as info_dict,
)
from agentdbg.cli.json_output import (
    record_dict as record_dict,
)
from agentdbg.cli.json_output import (
    verdict_dict as verdict_dict,
)
from agentdbg.cli.problems import (  # noqa: F401
    MAX_PROBLEMS_SHOWN as MAX_PROBLEMS_SHOWN,
)
from agentdbg.cli.problems import (
    fail as fail,
)
from agentdbg.cli.problems import (
    print_problems as print_problems,
)
from agentdbg.cli.problems import (
    quiet_broken_pipe as quiet_broken_pipe,
)
from agentdbg.cli.terminal import make_console as make_console
from agentdbg.cli.terminal import terminal_stream as terminal_stream
from agentdbg.cli.text_output import (  # noqa: F401
    LABEL_STYLES as LABEL_STYLES,
)
from agentdbg.cli.text_output import (
    MARKER_STYLES as MARKER_STYLES,
)
from agentdbg.cli.text_output import (
    TEXT_CHARS as TEXT_CHARS,
)
from agentdbg.cli.text_output import (
    _clean as _clean,
)
from agentdbg.cli.text_output import (
    _first_lines as _first_lines,
)
from agentdbg.cli.text_output import (
    _pair as _pair,
)
from agentdbg.cli.text_output import (
    _text as _text,
)
from agentdbg.cli.text_output import (
    _wrap as _wrap,
)
from agentdbg.cli.text_output import (
    counters_line as counters_line,
)
from agentdbg.cli.text_output import (
    emit as emit,
)
from agentdbg.cli.text_output import (
    guards_text as guards_text,
)
from agentdbg.cli.text_output import (
    memory_line as memory_line,
)
from agentdbg.cli.text_output import (
    outcome_text as outcome_text,
)
from agentdbg.cli.text_output import (
    plural as plural,
)
from agentdbg.cli.text_output import (
    rows_text as rows_text,
)
from agentdbg.cli.text_output import (
    run_header as run_header,
)
from agentdbg.cli.text_output import (
    run_title as run_title,
)
from agentdbg.cli.text_output import (
    state_block as state_block,
)
from agentdbg.cli.text_output import (
    step_block as step_block,
)
from agentdbg.model.outcome import VERDICT_STYLES as VERDICT_STYLES
from agentdbg.model.outcome import outcome_style as outcome_style
from agentdbg.model.outcome import run_outcome as run_outcome
from agentdbg.model.outcome import run_verdict as run_verdict
from agentdbg.model.outcome import verdict_style as verdict_style
from agentdbg.text import escape_json as escape_json
