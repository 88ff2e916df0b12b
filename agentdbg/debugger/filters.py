"""A small filter language over steps, in the spirit of mitmproxy's flow filters.

``parse_filter("~tool calc & !~error")`` gives a ``Filter`` whose ``matches(record)``
says whether a step (a ``state.StepRecord``) fits. Filters drive conditional breakpoints,
and the help screen's table (``FILTER_HELP``) is generated from the filter classes here.

Syntax:

* ``~code`` flags (``~error``, ``~repeat``...) and ``~code ARG`` filters (``~tool calc``,
  ``~obs REGEX``, ``~step >10``);
* ``!`` not, ``&`` and (two filters side by side are also joined by and), ``|`` or;
  precedence ``!`` > ``&`` > ``|``; parentheses group;
* an argument ends at whitespace; quote it with ``"..."`` or ``'...'`` to include spaces
  (a backslash escapes the quote character);
* a bare word or quoted string on its own means ``~text`` (anywhere in the step's text).

Regexes go through ``agentdbg.regex``: RE2 syntax, matched in linear time whatever the
pattern; smart case: case-insensitive unless the pattern has an uppercase letter (escapes
such as ``\\S`` or ``\\W`` do not count); ``^`` and ``$`` match at each line. A regex
error names its column in the whole expression.

Matching never raises: a step whose fields are missing or odd simply does not match.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, ClassVar

from agentdbg import regex
from agentdbg.debugger import quick
from agentdbg.engine.events import ERROR_KINDS, GUARD_NAMES

MAX_DEPTH = 64  # nesting of parentheses and "!": deeper is certainly a mistake
_SEARCH_LIMIT = 1_000_000  # characters of one field a regex looks at (a huge field stays cheap)


# --- helpers -------------------------------------------------------------------------

def _as_text(value: Any) -> str:
    """Any field value as text; never raises."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(value)
        except Exception:  # a value whose repr itself fails
            return ""


def compile_regex(pattern: str) -> regex.Pattern:
    """Compile with smart case, ``^`` and ``$`` at line ends as in grep (see ``regex``);
    a ``regex.RegexError`` (a ValueError) says what is wrong and where."""
    return regex.compile_smart(pattern)


def transcript_text(record: Any) -> str:
    """Everything a step says, as one text (for ``~text`` and transcript search)."""
    try:
        return "\n".join(_as_text(text) for _, text in record.transcript())
    except Exception:
        return ""


def _search(pattern: regex.Pattern, value: Any) -> bool:
    text = value if type(value) is str else _as_text(value)
    if len(text) > _SEARCH_LIMIT:
        text = text[:_SEARCH_LIMIT]
    return pattern.found(text)


# --- the filter classes ---------------------------------------------------------------

class Filter:
    """A parsed filter expression. ``matches(record)`` never raises."""

    code: ClassVar[str] = ""
    arg: ClassVar[str] = ""  # the argument's placeholder in help, "" for a flag
    help: ClassVar[str] = ""
    needs: ClassVar[str] = ""  # what a missing argument should have been, for the error

    _predicate: Callable[[Any], bool] | None = None

    def matches(self, record: Any) -> bool:
        predicate = self._predicate
        if predicate is None:
            predicate = self._predicate = self.predicate()
        return predicate(record)

    def predicate(self) -> Callable[[Any], bool]:
        """The filter as one plain function of the record: built once, called for every
        step a continue scans, so it avoids per-node method dispatch."""
        test = self._matches

        def safe(record: Any) -> bool:
            try:
                return bool(test(record))
            except Exception:  # an odd record does not match; it never crashes the debugger
                return False

        return safe

    def _matches(self, record: Any) -> bool:
        raise NotImplementedError

    eventful: ClassVar[bool] = False  # matches only steps with an error, trip, answer, end...

    def bytes_test(self) -> quick.BytesTest | None:
        """A test on the step's raw trace lines, (step, data) -> False only when this
        filter certainly does not match (see ``quick``); None when the decoded step is
        needed to tell."""
        return quick.may_be_eventful if self.eventful else None

    def block_test(self) -> quick.BlockTest | None:
        """The same test over a block of a trace file's steps (``agentdbg.trace.scan``):
        (block) -> the steps that may match; None when the decoded steps are needed."""
        if self.eventful:
            return quick.eventful_block_test
        test = self.bytes_test()
        return None if test is None else quick.per_step_block_test(test)

    def __str__(self) -> str:
        return self.code


def _judged(record: Any) -> bool | None:
    """The grader's judgement of the run, on the step where it ended (None elsewhere, and
    for a run without a verdict or with a score but no judgement)."""
    end = record.end
    verdict = end.verdict if end is not None else None
    return verdict.get("correct") if isinstance(verdict, dict) else None


class _Flag(Filter):
    """A filter without an argument: one test of the step record (see ``_FLAGS``)."""

    @staticmethod
    def test(record: Any) -> bool:
        raise NotImplementedError

    def _matches(self, record: Any) -> bool:
        return bool(self.test(record))

    def bytes_test(self) -> quick.BytesTest | None:
        return _RAW_TESTS.get(self.code) or super().bytes_test()


def _decision(record: Any) -> str | None:
    return record.approval.decision if record.approval is not None else None


# The flags, in a table: (code, help, test of the record, eventful: matches only a step with
# an error, trip, answer, end...). Each becomes a class, so ``FILTERS`` maps every code alike.
_FLAGS: tuple[tuple[str, str, Callable[[Any], bool], bool], ...] = (
    ("~error", "any error: a tool error, a parse error or an error observation",
     lambda record: record.is_error, True),
    ("~parse", "the policy's output could not be read (parse error)",
     lambda record: record.parse_error is not None, True),
    ("~repeat", "the step's action (or unreadable output) repeats an earlier one",
     lambda record: record.is_repeat, True),
    ("~tripped", "a guard stopped the run in this step",
     lambda record: record.tripped is not None, True),
    ("~final", "the step gives the final answer", lambda record: record.answer is not None, True),
    ("~end", "the run ended in this step (answer, guard, script exhausted...)",
     lambda record: record.end is not None, True),
    ("~wrong", "the run ends here and a grader judged it wrong (its verdict)",
     lambda record: _judged(record) is False, True),
    ("~correct", "the run ends here and a grader judged it correct",
     lambda record: _judged(record) is True, True),
    ("~raw", "the step holds records an import could not map", lambda record: len(record.raw) > 0, True),
    ("~approval", "a call to a dangerous tool asked for a decision (approved, denied or edited)",
     lambda record: record.approval is not None, True),
    ("~denied", "a call to a dangerous tool was denied: it did not run",
     lambda record: _decision(record) == "denied", True),
    ("~edited", "a call to a dangerous tool ran with arguments edited before it ran",
     lambda record: _decision(record) == "edited", True),
    ("~replayed", "the observation is the recorded result of an operation key: the call did not run again",
     lambda record: record.replayed is not None, False),
)
_RAW_TESTS: dict[str, quick.BytesTest] = {"~replayed": lambda step, data: b'"replayed":' in data}


def _flag_class(code: str, help: str, test: Callable[[Any], bool], eventful: bool) -> type[_Flag]:
    name = "F" + code[1:].capitalize()
    return type(name, (_Flag,), {"code": code, "help": help, "test": staticmethod(test),
                                 "eventful": eventful, "__module__": __name__})


_FLAG_CLASSES = {row[0]: _flag_class(*row) for row in _FLAGS}
(FError, FParse, FRepeat, FTripped, FFinal, FEnd, FWrong, FCorrect, FRaw, FApproval, FDenied,
 FEdited, FReplayed) = _FLAG_CLASSES.values()


class FReflection(Filter):
    code = "~reflection"
    help = "a reflection step: the policy's critique of a failed step before it retried"

    def _matches(self, record: Any) -> bool:
        return record.reflection is not None

    def bytes_test(self) -> quick.BytesTest | None:
        return lambda step, data: b'"type":"reflection"' in data


class FPlan(Filter):
    code = "~plan"
    help = "the policy wrote a plan (the first, or a replan)"

    def _matches(self, record: Any) -> bool:
        return record.plan is not None

    def bytes_test(self) -> quick.BytesTest | None:
        return lambda step, data: b'"type":"plan"' in data


class FPlanned(Filter):
    code = "~planned"
    help = "the step carried out an item of a plan, without asking the policy"

    def _matches(self, record: Any) -> bool:
        return bool(record.item > 0)

    def bytes_test(self) -> quick.BytesTest | None:
        return lambda step, data: b'"item":' in data


class FParallel(Filter):
    code = "~parallel"
    help = "the step made several tool calls at once"

    def _matches(self, record: Any) -> bool:
        return bool(len(record.calls) > 1)

    def bytes_test(self) -> quick.BytesTest | None:
        return lambda step, data: data.count(b'"type":"action"') > 1


class _Arg(Filter):
    """A filter with one argument; ``build`` turns the argument text into the filter
    (ValueError with a message when it cannot)."""

    def __init__(self, argument: str):
        self.argument = argument

    def __str__(self) -> str:
        return f"{self.code} {_quote(self.argument)}"


class _Regex(_Arg):
    arg = "REGEX"
    field: ClassVar[str] = ""
    per_call: ClassVar[bool] = False  # in a step of several calls, any call's field may match
    # The field can show what the step's lines do not hold (a call made from its tool and
    # arguments, arguments shown as JSON, the transcript's texts made up when shown).
    made_up: ClassVar[bool] = False

    def __init__(self, argument: str):
        super().__init__(argument)
        self.pattern = compile_regex(argument)

    def _matches(self, record: Any) -> bool:
        if self.per_call and record.calls:
            return any(_search(self.pattern, getattr(call, self.field)) for call in record.calls)
        return _search(self.pattern, getattr(record, self.field))

    def bytes_test(self) -> quick.BytesTest | None:
        may_match = quick.regex_bytes_test(self.argument, regex.has_upper(self.argument), self.made_up)
        return None if may_match is None else (lambda step, data: may_match(data))

    def block_test(self) -> quick.BlockTest | None:
        return quick.regex_block_test(self.argument, regex.has_upper(self.argument), self.made_up)


class FTool(_Arg):
    code = "~tool"
    arg = "NAME"
    help = "the step calls this tool, among its calls if several (exact name; /REGEX/ for a pattern)"
    needs = "a tool name"

    def __init__(self, argument: str):
        super().__init__(argument)
        if len(argument) >= 2 and argument.startswith("/") and argument.endswith("/"):
            self.pattern: regex.Pattern | None = compile_regex(argument[1:-1])
        else:
            self.pattern = None

    def bytes_test(self) -> quick.BytesTest | None:
        return None if self.pattern is not None else quick.may_name([self.argument])

    def block_test(self) -> quick.BlockTest | None:
        return None if self.pattern is not None else quick.name_block_test([self.argument])

    def _matches(self, record: Any) -> bool:
        if record.calls:  # several calls: any of them
            return any(self._names(call.tool) for call in record.calls)
        return record.tool is not None and self._names(record.tool)

    def _names(self, tool: str) -> bool:
        if self.pattern is not None:
            return _search(self.pattern, tool)
        return bool(tool == self.argument)


class FKind(_Arg):
    code = "~kind"
    arg = "KIND"
    help = "the step's error is of this kind: " + ", ".join(ERROR_KINDS)
    eventful = True
    needs = "an error kind (" + ", ".join(ERROR_KINDS) + ")"

    def __init__(self, argument: str):
        if argument not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {argument!r}; known: {', '.join(ERROR_KINDS)}")
        super().__init__(argument)

    def _matches(self, record: Any) -> bool:
        return bool(record.error_kind == self.argument)


GUARD_ALIASES = {"steps": "max_steps", "step": "max_steps", "repeat": "repetition",
                 "errors": "error_budget", "error": "error_budget", "tokens": "token_budget"}


class FGuard(_Arg):
    code = "~guard"
    arg = "NAME"
    help = "this guard stopped the run: " + ", ".join(GUARD_NAMES)
    eventful = True
    needs = "a guard name (" + ", ".join(GUARD_NAMES) + ")"

    def __init__(self, argument: str):
        name = GUARD_ALIASES.get(argument, argument)
        if name not in GUARD_NAMES:
            raise ValueError(f"unknown guard {argument!r}; known: {', '.join(GUARD_NAMES)}")
        super().__init__(argument)
        self.name = name

    def _matches(self, record: Any) -> bool:
        return record.tripped is not None and record.tripped.guard == self.name


# The regex filters over one field of the step: (code, help, field, made_up: the field can
# show what the step's lines do not hold, see _Regex; per call: in a step of several calls,
# any call's field may match).
_FIELD_REGEXES = (
    ("~obs", "the observation matches", "observation", False, False),
    ("~thought", "the thought matches", "thought", False, False),
    ("~action", "the action as written matches (e.g. calc[5 - 3]; any of a step's calls)", "call", True, True),
    ("~args", "the action's arguments (as text or JSON) match (any of a step's calls)", "args", True, True),
    ("~answer", "the final answer matches", "answer", False, False),
)
_FIELD_CLASSES: dict[str, type[_Regex]] = {
    code: type("F" + code[1:].capitalize(), (_Regex,),
               {"code": code, "help": help, "field": field, "made_up": made_up, "per_call": per_call,
                "__module__": __name__})
    for code, help, field, made_up, per_call in _FIELD_REGEXES
}
FObs, FThought, FAction, FArgs, FAnswer = _FIELD_CLASSES.values()


class FOutcome(_Regex):
    code = "~outcome"
    help = "the run ends here and its outcome matches (answered, budget exhausted, action repeated...)"
    eventful = True

    def _matches(self, record: Any) -> bool:
        return record.end is not None and _search(self.pattern, record.end.outcome)

    def bytes_test(self) -> quick.BytesTest | None:
        return quick.may_be_eventful


class FText(_Regex):
    code = "~text"
    made_up = True
    help = "anywhere in the step's text: thought, action, output, observation, answer"

    def _matches(self, record: Any) -> bool:
        return self.pattern.found(transcript_text(record)[:_SEARCH_LIMIT])


_COMPARISON = re.compile(r"^(>=|<=|==|>|<|=)?\s*(\d{1,18})$")
_RANGE = re.compile(r"^(\d{1,18})\.\.(\d{1,18})$")


class _Compare(_Arg):
    arg = "CMP"
    what: ClassVar[str] = "a comparison like >10, <=5, =3 or 5..9"
    test: Callable[[int], bool]

    def __init__(self, argument: str):
        super().__init__(argument)
        text = argument.replace(" ", "")
        match = _RANGE.match(text)
        if match:
            low, high = int(match[1]), int(match[2])
            self.test = lambda n: low <= n <= high
            return
        match = _COMPARISON.match(text)
        if not match:
            raise ValueError(f"{self.code} needs {self.what} (got {argument!r})")
        op, value = match[1] or "=", int(match[2])
        self.test = {
            ">": lambda n: n > value, "<": lambda n: n < value,
            ">=": lambda n: n >= value, "<=": lambda n: n <= value,
            "=": lambda n: n == value, "==": lambda n: n == value,
        }[op]

    def value(self, record: Any) -> Any:
        raise NotImplementedError

    def _matches(self, record: Any) -> bool:
        value = self.value(record)
        return isinstance(value, int) and not isinstance(value, bool) and self.test(value)


class FStep(_Compare):
    code = "~step"
    help = "the step number compares: >10, <5, >=3, <=3, =7 (or 7), 5..9"

    def value(self, record: Any) -> Any:
        return record.step

    def bytes_test(self) -> quick.BytesTest | None:
        test = self.test
        return lambda step, data: test(step)

    def block_test(self) -> quick.BlockTest | None:
        test = self.test
        return lambda block: {step for step in range(block.first, block.last + 1) if test(step)}


class FTokens(_Compare):
    code = "~tokens"
    help = "this step's token cost compares (as ~step)"

    def value(self, record: Any) -> Any:
        return record.guards.step_tokens if record.guards is not None else None


class FTotal(_Compare):
    code = "~total"
    help = "the run's token total after this step compares (as ~step)"

    def value(self, record: Any) -> Any:
        return record.guards.tokens[0] if record.guards is not None else None


# In the order the help screen lists them.
FILTERS: dict[str, type[Filter]] = {
    cls.code: cls
    for cls in (FTool, FError, FParse, FKind, FRepeat, FTripped, FGuard, FFinal, FEnd, FWrong,
                FCorrect, FOutcome, FObs, FThought, FAction, FArgs, FAnswer, FText, FStep, FTokens, FTotal, FRaw,
                FApproval, FDenied, FEdited, FReplayed, FPlan, FPlanned, FReflection, FParallel)
}


class Not(Filter):
    def __init__(self, inner: Filter):
        self.inner = inner

    def predicate(self) -> Callable[[Any], bool]:
        inner = self.inner.predicate()
        return lambda record: not inner(record)

    def __str__(self) -> str:
        return f"!{_group(self.inner)}"


class And(Filter):
    def __init__(self, parts: list[Filter]):
        self.parts = parts

    def predicate(self) -> Callable[[Any], bool]:
        return functools.reduce(_both, [part.predicate() for part in self.parts])

    def bytes_test(self) -> quick.BytesTest | None:
        tests = [t for t in (part.bytes_test() for part in self.parts) if t is not None]
        if not tests:
            return None
        return lambda step, data: all(test(step, data) for test in tests)

    def block_test(self) -> quick.BlockTest | None:
        tests = [t for t in (part.block_test() for part in self.parts) if t is not None]
        if not tests:
            return None
        return lambda block: set.intersection(*(test(block) for test in tests))

    def __str__(self) -> str:
        return " & ".join(_group(p) for p in self.parts)


class Or(Filter):
    def __init__(self, parts: list[Filter]):
        self.parts = parts

    def predicate(self) -> Callable[[Any], bool]:
        return functools.reduce(_either, [part.predicate() for part in self.parts])

    def bytes_test(self) -> quick.BytesTest | None:
        tests = [test for test in (part.bytes_test() for part in self.parts) if test is not None]
        if len(tests) < len(self.parts):
            return None
        return lambda step, data: any(test(step, data) for test in tests)

    def block_test(self) -> quick.BlockTest | None:
        tests = [test for test in (part.block_test() for part in self.parts) if test is not None]
        if len(tests) < len(self.parts):
            return None
        return lambda block: set().union(*(test(block) for test in tests))

    def __str__(self) -> str:
        return " | ".join(_group(p) for p in self.parts)


def _both(a: Callable[[Any], bool], b: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda record: a(record) and b(record)


def _either(a: Callable[[Any], bool], b: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda record: a(record) or b(record)


def _group(part: Filter) -> str:
    return f"({part})" if isinstance(part, (And, Or)) else str(part)


def _quote(text: str) -> str:
    if text and not any(ch.isspace() or ch in "\"'()" for ch in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


FILTER_HELP: list[tuple[str, str]] = [
    *((f"{cls.code} {cls.arg}".strip(), cls.help) for cls in FILTERS.values()),
    ("!", "not"),
    ("&", "and (two filters side by side are joined by and too)"),
    ("|", "or (binds looser than &)"),
    ("( )", "grouping"),
    ("WORD", 'a bare word or "quoted text": same as ~text'),
]


# --- the parser -----------------------------------------------------------------------

_OPERATORS = "()!&|"
_CODE = re.compile(r"~[A-Za-z_]*")
_WORD_STOP = "()&|\"'"


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.depth = 0
        self.quoted_from: list[int] = []  # the text's position of each character read_quoted gave

    def column(self, pos: int | None = None) -> str:
        """Where, for a message: "column N" (1-based; the current position by default)."""
        return f"column {(self.pos if pos is None else pos) + 1}"

    def error(self, message: str) -> ValueError:
        return ValueError(message)

    def skip_space(self) -> None:
        text = self.text
        while self.pos < len(text) and text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        """The next token's first character after whitespace ('' at the end)."""
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    # expression := or ; or := and ('|' and)* ; and := not ('&'? not)* ; not := '!'* atom
    def parse(self) -> Filter:
        if not self.peek():
            raise self.error("empty filter: write e.g. ~error, ~tool calc or a word to look for")
        result = self.parse_or()
        if self.peek() == ")":
            raise self.error(f"unexpected ) at {self.column()}: no ( to close")
        return result

    def parse_or(self) -> Filter:
        parts = [self.parse_and()]
        while self.peek() == "|":
            at = self.pos
            self.pos += 1
            if self.peek() in ("", ")", "|", "&"):
                raise self.error(f"| at {self.column(at)} needs a filter after it")
            parts.append(self.parse_and())
        return parts[0] if len(parts) == 1 else Or(parts)

    def parse_and(self) -> Filter:
        parts = [self.parse_not()]
        while True:
            nxt = self.peek()
            if nxt == "&":
                at = self.pos
                self.pos += 1
                if self.peek() in ("", ")", "|", "&"):
                    raise self.error(f"& at {self.column(at)} needs a filter after it")
            elif nxt in ("", ")", "|"):
                break
            parts.append(self.parse_not())
        return parts[0] if len(parts) == 1 else And(parts)

    def parse_not(self) -> Filter:
        negations = 0
        while self.peek() == "!":
            at = self.pos
            self.pos += 1
            negations += 1
            if self.peek() in ("", ")", "|", "&"):
                raise self.error(f"! at {self.column(at)} needs a filter after it")
        result = self.parse_atom()
        for _ in range(negations % 2):
            result = Not(result)
        return result

    def parse_atom(self) -> Filter:
        ch = self.peek()
        start = self.pos
        if ch == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.error(f"too many nested parentheses at {self.column()} (at most {MAX_DEPTH})")
            self.pos += 1
            if self.peek() == ")":
                raise self.error(f"empty parentheses at {self.column(start)}")
            if self.peek() == "":
                raise self.error(f"( at {self.column(start)} needs a filter and a closing )")
            inner = self.parse_or()
            if self.peek() != ")":
                raise self.error(f"missing ) at {self.column()} (to close the ( at column {start + 1})")
            self.pos += 1
            self.depth -= 1
            return inner
        if ch == "":
            raise self.error(f"a filter is missing at {self.column()}")
        if ch in ("&", "|"):
            raise self.error(f"{ch} at {self.column()} needs a filter before it")
        if ch == ")":
            raise self.error(f"unexpected ) at {self.column()}")
        if ch == "~":
            return self.parse_code()
        quoted = ch in ('"', "'")
        text = self.read_quoted() if quoted else self.read_word()
        try:
            return FText(text)
        except regex.RegexError as exc:
            at = self.regex_column(exc, start, quoted)
            raise self.error(f"invalid regex {text!r} at {at}: {exc.reason}") from None

    def parse_code(self) -> Filter:
        start = self.pos
        match = _CODE.match(self.text, self.pos)
        code = match.group(0) if match else "~"
        self.pos = match.end() if match else self.pos + 1
        if code == "~":
            raise self.error(f"~ at {self.column(start)} needs a filter name, e.g. ~error; known: {_known()}")
        cls = FILTERS.get(code)
        if cls is None:
            raise self.error(f"{code}: unknown filter at {self.column(start)}; known: {_known()}")
        if not issubclass(cls, _Arg):
            return cls()
        self.skip_space()
        arg_start = self.pos
        quoted = self.text[arg_start:arg_start + 1] in ('"', "'")
        argument = self.read_argument(cls, start)
        if issubclass(cls, _Compare) and argument in (">", "<", ">=", "<=", "=", "=="):
            argument += self.read_argument(cls, start)  # "~step > 10" reads like "~step >10"
        try:
            return cls(argument)
        except regex.RegexError as exc:
            skip = 1 if cls is FTool else 0  # the / that opens ~tool's /REGEX/
            at = self.regex_column(exc, arg_start, quoted, skip)
            raise self.error(f"{code}: invalid regex {argument!r} at {at}: {exc.reason}") from None
        except ValueError as exc:
            message = str(exc)
            if issubclass(cls, _Compare):
                message = f"{message} at {self.column(arg_start)}"
            else:
                message = f"{code}: {message} (at {self.column(arg_start)})"
            raise self.error(message) from None

    def regex_column(self, error: regex.RegexError, start: int, quoted: bool, skip: int = 0) -> str:
        """Where in the expression a regex error is: the faulty character of the argument
        read from ``start`` (its first character when the error names no place)."""
        if error.offset is None:
            return self.column(start)
        at = error.offset + skip
        if quoted:
            return self.column(self.quoted_from[at] if at < len(self.quoted_from) else start)
        return self.column(start + at)

    def read_argument(self, cls: type[Filter], code_start: int) -> str:
        ch = self.peek()
        if ch in ("", ")", "|", "&") or ch == "~":
            what = cls.needs or {"REGEX": "a regex", "CMP": "a comparison like >10 or 5..9"}.get(
                cls.arg, "an argument")
            raise self.error(f"{cls.code} needs {what} at {self.column(code_start)}")
        if ch in ('"', "'"):
            return self.read_quoted()
        # An unquoted argument runs to whitespace; a ")" it did not open ends it (and a group).
        text, pos, depth = self.text, self.pos, 0
        while pos < len(text) and not text[pos].isspace():
            c = text[pos]
            if c == "\\":
                pos += 2
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            pos += 1
        pos = min(pos, len(text))
        argument = text[self.pos:pos]
        self.pos = pos
        return argument

    def read_word(self) -> str:
        text, pos = self.text, self.pos
        while pos < len(text) and not text[pos].isspace() and text[pos] not in _WORD_STOP:
            pos += 1
        word = text[self.pos:pos]
        self.pos = pos
        return word

    def read_quoted(self) -> str:
        quote, start = self.text[self.pos], self.pos
        pos = start + 1
        out: list[str] = []
        came_from = self.quoted_from = []
        while pos < len(self.text):
            c = self.text[pos]
            if c == "\\" and pos + 1 < len(self.text) and self.text[pos + 1] in (quote, "\\"):
                out.append(self.text[pos + 1])
                came_from.append(pos)
                pos += 2
                continue
            if c == quote:
                self.pos = pos + 1
                return "".join(out)
            out.append(c)
            came_from.append(pos)
            pos += 1
        raise self.error(f"unterminated {quote} starting at {self.column(start)}")


def _known() -> str:
    return ", ".join(FILTERS)


def parse_filter(text: str) -> Filter:
    """Parse a filter expression; ValueError says what is wrong and at which column."""
    if not isinstance(text, str):
        raise ValueError("a filter is text")
    return _Parser(text).parse()
