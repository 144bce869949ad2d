"""The jinja2 sandbox that scenario templates run in, with a meter on them.

jinja2's sandbox keeps templates away from Python internals but not from
exhausting memory or time: ``{{ 'a' * 3000000000 }}``, nested loops, or a
string doubled in a loop.  Here every place where a template makes text or
runs code is metered against the limits (see limits.py):

* output, ``~`` concatenation, and the results of operators, calls and
  filters count towards ``template_chars``; operations that would allocate
  a lot at once (``*``, ``%``, ``str.center``, ``replace``, ``join`` ...) are
  estimated and refused *before* they run;
* loop iterations, calls and filters count towards ``template_steps``;
* all of it checks the file's ``template_seconds``.

Lists, dicts and sets cannot be modified (jinja2's immutable sandbox): a list
that extends itself in a loop would double without producing any output.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeGuard

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .limits import LimitExceeded, Limits

_SIZED = (str, list, tuple, dict, set, frozenset)
_CONTAINERS = (list, tuple, dict, set, frozenset)
# A printf conversion's width and precision, and a str.format spec.
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_NESTED_FIELD = re.compile(r"\{[^{}]*:[^{}]*\{")
_NUMBER = re.compile(r"\d+")


class Meter:
    """What one template has used; raises LimitExceeded past a limit."""

    def __init__(self, limits: Limits, deadline: float) -> None:
        self.limits = limits
        self.deadline = deadline
        self.chars = 0
        self.steps = 0

    def room(self) -> int:
        """Characters the template may still produce."""
        return self.limits.template_chars - self.chars

    def allow(self, size: int, what: str) -> None:
        """Refuse, before it runs, an operation that would make ``size`` characters."""
        if size > self.room():
            found = f"{what} would make {size:,} characters"
            if self.chars:
                found += f" on top of the {self.chars:,} the template has already made"
            raise LimitExceeded(self.limits.exceeded("template_chars", found))

    def produced(self, value: Any) -> None:
        if isinstance(value, _SIZED):
            self.chars += len(value)
            if self.chars > self.limits.template_chars:
                found = f"the template makes more than {self.limits.template_chars:,} characters"
                raise LimitExceeded(self.limits.exceeded("template_chars", found))
        self.tick()

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > self.limits.template_steps:
            found = (
                f"the template runs more than {self.limits.template_steps:,} "
                "loop iterations and calls"
            )
            raise LimitExceeded(self.limits.exceeded("template_steps", found))
        self.tick()

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            found = (
                f"rendering the templates of this file ran past {self.limits.template_seconds:,} s"
            )
            raise LimitExceeded(self.limits.exceeded("template_seconds", found))


_METER: ContextVar[Meter | None] = ContextVar("ctxeval_template_meter", default=None)


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    """Templates run inside the block are metered by ``meter``."""
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def _meter() -> Meter:
    # Templates only run inside ``metering``; a fresh default meter keeps
    # anything else (jinja2 folding constants while compiling) bounded too.
    return _METER.get() or Meter(Limits(), time.monotonic() + Limits().template_seconds)


# -- the compiled template calls these ---------------------------------------------------


class MeteredCodeGenerator(CodeGenerator):
    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        # Iterate through ``environment.metered_iter(iterable, literal)``:
        # each iteration counts as a step, plus the literal text of the body
        # that it outputs.  (jinja2 allows no new node types; a call of an
        # environment attribute needs no name lookup.)
        if not _is_metered(node.iter):
            literal = sum(len(data.data) for data in node.find_all(nodes.TemplateData))
            metered = nodes.EnvironmentAttribute("metered_iter", lineno=node.lineno)
            node.iter = nodes.Call(
                metered, [node.iter, nodes.Const(literal)], [], None, None, lineno=node.lineno
            )
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        # ``a ~ b``; not constant-folded, so long literal joins are counted too.
        self.write("environment.metered_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class MeteredEnvironment(ImmutableSandboxedEnvironment):
    code_generator_class = MeteredCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(finalize=_output, **kwargs)
        self.globals["range"] = _range
        # HTML helpers that insert an argument at every match: no use in a
        # scenario, and each an easy way to multiply text.
        for name in ("urlize", "xmlattr"):
            self.filters.pop(name, None)
        self.filters = {name: _metered_filter(name, f) for name, f in self.filters.items()}
        self.globals.pop("lipsum", None)  # makes any number of paragraphs

    def metered_iter(self, iterable: Iterable[Any], literal: int) -> Iterator[Any]:
        meter = _meter()
        for item in iterable:
            meter.step()
            if literal:
                meter.allow(literal, "another loop iteration")
                meter.chars += literal
            yield item

    def metered_concat(self, parts: tuple[Any, ...]) -> str:
        meter = _meter()
        texts = [str(part) for part in parts]
        meter.allow(sum(map(len, texts)), "joining with ~")
        result = "".join(texts)
        meter.produced(result)
        return result

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        meter = _meter()
        _check_binop(meter, operator, left, right)
        result = super().call_binop(context, operator, left, right)
        meter.produced(result)
        return result

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if getattr(__obj, "__func__", None) is MeteredEnvironment.metered_iter:
            return __obj(*args)  # counts its own steps
        meter = _meter()
        # A recursive loop's ``loop(children)`` iterates its argument unmetered.
        meter.step(1 + (_contained(args, kwargs) if isinstance(__obj, LoopContext) else 0))
        args = _check_method(meter, __obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        meter.produced(result)
        return result


def _is_metered(node: nodes.Node) -> bool:
    return (
        isinstance(node, nodes.Call)
        and isinstance(node.node, nodes.EnvironmentAttribute)
        and node.node.name == "metered_iter"
    )


def _output(value: Any) -> Any:
    """Every ``{{ ... }}`` output passes here (jinja2's ``finalize``)."""
    text = str(value)
    _meter().produced(text)
    return text


def _range(*args: int) -> range:
    numbers = range(*args)
    meter = _meter()
    if len(numbers) > meter.limits.template_steps:
        found = f"range() of {len(numbers):,} numbers"
        raise LimitExceeded(meter.limits.exceeded("template_steps", found))
    return numbers


# -- estimates, made before an operation runs -------------------------------------------


def _check_binop(meter: Meter, operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, _SIZED) and isinstance(times, int):
                meter.allow(len(seq) * max(times, 0), f"repeating {_kind(seq)} {times:,} times")
        if _is_int(left) and _is_int(right):
            _allow_digits(_digits(left) + _digits(right), "multiplying these integers")
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            _allow_digits(math.ceil(right * math.log10(abs(left))), f"{left} ** {right:,}")
    elif operator == "+":
        if isinstance(left, _SIZED) and isinstance(right, _SIZED):
            meter.allow(len(left) + len(right), f"adding {_kind(left)} to {_kind(right)}")
    elif operator == "%" and isinstance(left, str):
        meter.allow(len(left) + _printf_widths(left, right), "% formatting with these widths")


def _check_method(
    meter: Meter, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """String methods whose result can be far longer than their inputs are
    estimated first; returns the arguments to call with (an iterator to join
    is read into a list, so its length is known)."""
    method = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
    text = getattr(method, "__self__", None)
    if not isinstance(text, str):
        return args
    name = getattr(method, "__name__", "")
    first = args[0] if args else None
    if name in ("format", "format_map"):
        meter.allow(len(text) + _format_widths(text, args, kwargs), f"str.{name} with these widths")
    elif name in ("center", "ljust", "rjust", "zfill") and _is_int(first):
        meter.allow(first, f"str.{name}({first:,})")
    elif name == "replace" and len(args) >= 2:
        meter.allow(_replaced(text, args[0], args[1]), "str.replace")
    elif name == "join" and args:
        items = _sized(meter, args[0])
        meter.allow(_joined(items, text), "str.join")
        args = (items, *args[1:])
    elif name == "expandtabs":
        tabsize = first if args else kwargs.get("tabsize", 8)
        if _is_int(tabsize):
            meter.allow(len(text) + text.count("\t") * max(tabsize, 0), "str.expandtabs")
    elif name == "translate" and isinstance(first, dict):
        longest = max((len(v) for v in first.values() if isinstance(v, str)), default=1)
        meter.allow(len(text) * longest, "str.translate")
    return args


def _metered_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # Filters marked to take the environment or context get it first.
    skip = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0

    def metered(*args: Any, **kwargs: Any) -> Any:
        meter = _meter()
        values = args[skip:]
        meter.step()
        if name == "join" and values:
            values = (_sized(meter, values[0]), *values[1:])
            args = (*args[:skip], *values)
        _check_filter(meter, name, values, kwargs)
        result = function(*args, **kwargs)
        meter.produced(result)
        return result

    metered.__dict__.update(getattr(function, "__dict__", {}))  # jinja2's pass-argument marker
    metered.__name__ = getattr(function, "__name__", name)
    metered.__doc__ = function.__doc__
    return metered


def _check_filter(meter: Meter, name: str, values: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not values:
        return
    value, rest = values[0], values[1:]
    text = value if isinstance(value, str) else None

    def argument(index: int, key: str, default: Any) -> Any:
        return rest[index] if len(rest) > index else kwargs.get(key, default)

    if name in ("center", "batch", "slice"):
        # A width or count: center pads to it, batch and slice fill up to it.
        size = argument(0, {"center": "width", "batch": "linecount"}.get(name, "slices"), 0)
        if _is_int(size):
            meter.allow(size, f"|{name}({size:,})")
    elif name == "replace" and text is not None:
        meter.allow(_replaced(text, argument(0, "old", ""), argument(1, "new", "")), "|replace")
    elif name == "join":
        meter.allow(_joined(value, str(argument(0, "d", ""))), "|join")
    elif name == "indent" and text is not None:
        width = argument(0, "width", 4)
        per_line = len(width) if isinstance(width, str) else width if _is_int(width) else 0
        meter.allow(len(text) + (text.count("\n") + 1) * max(per_line, 0), "|indent")
    elif name == "wordwrap" and text is not None:
        width = argument(0, "width", 79)
        wrap = argument(2, "wrapstring", None) or "\n"
        lines = len(text) // max(width if _is_int(width) else 1, 1) + 1
        meter.allow(len(text) + lines * len(str(wrap)), "|wordwrap")
    elif name == "format" and text is not None:
        meter.allow(len(text) + _printf_widths(text, rest or kwargs), "|format")


def _sized(meter: Meter, items: Any) -> Any:
    """``items`` with a length: an iterator (``map``, ``select``) is read into
    a list, one step per item, so that joining it can be estimated."""
    if isinstance(items, (*_CONTAINERS, str)) or not isinstance(items, Iterable):
        return items
    listed = []
    for item in items:
        meter.step()
        listed.append(item)
    return listed


def _joined(items: Any, separator: str) -> int:
    if not isinstance(items, (*_CONTAINERS, str)):
        return 0
    size = (
        len(items) if isinstance(items, str) else sum(len(i) for i in items if isinstance(i, str))
    )
    return size + len(separator) * max(len(items) - 1, 0)


def _replaced(text: str, old: Any, new: Any) -> int:
    if not isinstance(old, str) or not isinstance(new, str):
        return len(text)
    matches = text.count(old) if old else len(text) + 1
    return len(text) + matches * max(len(new) - len(old), 0)


def _printf_widths(template: str, args: Any) -> int:
    """Characters that printf widths and precisions in ``template`` may add."""
    total = 0
    for width, precision in _PRINTF.findall(template):
        for number in (width, precision):
            if number and number != "*":
                total += int(number)
    if "*" in template:  # ``%*d`` takes its width from the arguments
        for value in args if isinstance(args, tuple) else ():
            if _is_int(value):
                total += max(value, 0)
    return total


def _format_widths(template: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Characters that widths and precisions in ``{:>20}`` fields may add."""
    total = sum(int(n) for spec in _FORMAT_SPEC.findall(template) for n in _NUMBER.findall(spec))
    if _NESTED_FIELD.search(template):  # ``{:{}}`` takes its width from the arguments
        values = [*args, *kwargs.values()]
        values += [v for a in args if isinstance(a, dict) for v in a.values()]  # format_map
        total += sum(max(v, 0) for v in values if _is_int(v))
    return total


def _contained(args: Iterable[Any], kwargs: dict[str, Any]) -> int:
    """Items in list, tuple, dict and set arguments: what a call may iterate."""
    values = [*args, *kwargs.values()]
    return sum(len(v) for v in values if isinstance(v, _CONTAINERS))


def _allow_digits(digits: int, what: str) -> None:
    """Integers past Python's printing limit cannot be rendered anyway, and
    computing them can take minutes."""
    most = sys.get_int_max_str_digits() or 4300
    if digits > most:
        raise LimitExceeded(
            f"{what} would make an integer of about {digits:,} digits; "
            f"templates may make integers of at most {most:,} digits"
        )


def _digits(number: int) -> int:
    return max(1, math.ceil(abs(number).bit_length() * math.log10(2)))


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return "text" if isinstance(value, str) else type(value).__name__
