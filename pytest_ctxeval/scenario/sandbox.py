"""The jinja2 sandbox that scenario templates run in, with a meter on them.

jinja2's sandbox keeps templates away from Python internals but not from
exhausting memory or time: ``{{ 'a' * 3000000000 }}``, nested loops, or a
string doubled in a loop.  Here every place where a template makes text or
runs code is metered against the limits (see limits.py):

* output, ``~`` concatenation, slices, and the results of operators, calls
  and filters count towards ``template_chars``; operations that would
  allocate a lot at once (``*``, ``%``, ``str.center``, ``replace``,
  ``join``, ``format``, ``pprint``, ``tojson``, printing a list ...) are
  estimated and refused *before* they run, counting what a list would print
  as, not its length (see estimates.py);
* loop iterations, calls and filters count towards ``template_steps``;
* all of it checks the file's ``template_seconds``.

Lists, dicts and sets cannot be modified (jinja2's immutable sandbox): a list
that extends itself in a loop would double without producing any output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .estimates import (
    check_binop,
    check_filter,
    check_method,
    check_slice,
    contained,
    printed_size,
    sized,
)
from .limits import LimitExceeded, Limits
from .meter import Meter

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
        room = meter.room() + 1
        size = sum(printed_size(part, room) for part in parts)
        estimated = not all(isinstance(part, str) for part in parts)
        meter.allow(size, "joining with ~", estimated=estimated)
        result = "".join(str(part) for part in parts)
        meter.produced(result)
        return result

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        meter = _meter()
        check_binop(meter, operator, left, right)
        result = super().call_binop(context, operator, left, right)
        meter.produced(result)
        return result

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if getattr(__obj, "__func__", None) is MeteredEnvironment.metered_iter:
            return __obj(*args)  # counts its own steps
        meter = _meter()
        # A recursive loop's ``loop(children)`` iterates its argument unmetered.
        meter.step(1 + (contained(args, kwargs) if isinstance(__obj, LoopContext) else 0))
        args = check_method(meter, __obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        meter.produced(result)
        return result

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(argument, slice):  # a copy of what it selects
            meter = _meter()
            check_slice(meter, obj, argument)
            result = super().getitem(obj, argument)
            meter.produced(result)
            return result
        return super().getitem(obj, argument)


def _is_metered(node: nodes.Node) -> bool:
    return (
        isinstance(node, nodes.Call)
        and isinstance(node.node, nodes.EnvironmentAttribute)
        and node.node.name == "metered_iter"
    )


def _output(value: Any) -> Any:
    """Every ``{{ ... }}`` output passes here (jinja2's ``finalize``)."""
    meter = _meter()
    if not isinstance(value, str):  # a list prints every item it refers to
        what = f"printing this {type(value).__name__}"
        meter.allow(printed_size(value, meter.room() + 1), what, estimated=True)
    text = str(value)
    meter.produced(text)
    return text


def _range(*args: int) -> range:
    numbers = range(*args)
    meter = _meter()
    if len(numbers) > meter.limits.template_steps:
        found = f"range() of {len(numbers):,} numbers"
        raise LimitExceeded(meter.limits.exceeded("template_steps", found))
    return numbers


def _metered_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # Filters marked to take the environment or context get it first.
    skip = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0

    def metered(*args: Any, **kwargs: Any) -> Any:
        meter = _meter()
        values = args[skip:]
        meter.step()
        if name == "join" and values:
            values = (sized(meter, values[0]), *values[1:])
            args = (*args[:skip], *values)
        check_filter(meter, name, values, kwargs)
        result = function(*args, **kwargs)
        meter.produced(result)
        return result

    metered.__dict__.update(getattr(function, "__dict__", {}))  # jinja2's pass-argument marker
    metered.__name__ = getattr(function, "__name__", name)
    metered.__doc__ = function.__doc__
    return metered
