"""Estimates of what a template operation would allocate, made before it runs.

A list costs little to make and a lot to print: ``[s] * 3000`` holds 3,000
references to one string, and printing it (or ``pprint``, ``tojson``,
``format``, ``join``) writes the string 3,000 times.  So what counts is the
text a value stands for once printed (``printed_size``), bounded from above
without printing it; every operation that turns values into text, repeats
or joins them is refused when that would go past what the template may
still make (``Meter.allow``)."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import ItemsView, Iterable, KeysView, ValuesView
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from jinja2.utils import Namespace

from .limits import LimitExceeded

if TYPE_CHECKING:
    from .meter import Meter

Mode = Literal["str", "repr", "json"]

_SIZED = (str, list, tuple, dict, set, frozenset)
_CONTAINERS = (list, tuple, dict, set, frozenset)
_VIEWS = (KeysView, ValuesView, ItemsView)
# A printf conversion's width and precision, and a str.format spec.
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_NESTED_FIELD = re.compile(r"\{[^{}]*:[^{}]*\{")
_NUMBER = re.compile(r"\d+")
# Characters repr() writes as an escape: each control character but these
# three as \xNN (three more characters).
_CONTROLS = [chr(c) for c in (*range(32), 127) if chr(c) not in "\n\t\r"]
# Nesting the estimate follows (and repr can print); a deeper value is refused.
_DEEPEST = 200
# Filters that print their first argument (str() of a list or a number).
_PRINTING_FILTERS = frozenset(
    {
        "capitalize",
        "center",
        "e",
        "escape",
        "forceescape",
        "format",
        "indent",
        "lower",
        "replace",
        "string",
        "striptags",
        "title",
        "trim",
        "truncate",
        "upper",
        "urlencode",
        "wordcount",
        "wordwrap",
    }
)


def printed_size(value: Any, cap: int, mode: Mode = "str") -> int:
    """At least the characters of ``str(value)`` (``repr``, or JSON as
    ``tojson`` writes it), counted without making the text; counting stops
    soon after ``cap``.  A value shared many times (``[x, x]``) is counted
    each time it would be printed, but looked at once."""
    seen: dict[int, int] = {}
    return _size(value, mode, cap, seen, 0)


def _size(value: Any, mode: Mode, cap: int, seen: dict[int, int], depth: int) -> int:
    if isinstance(value, str):
        return len(value) if mode == "str" else _quoted(value, mode)
    if value is None or isinstance(value, (bool, float, complex)):
        return 32
    if isinstance(value, int):
        return _digits(value) + 1
    if isinstance(value, (bytes, bytearray)):
        return 4 * len(value) + 14  # \xNN each, bytearray(b'')
    inner: Mode = "json" if mode == "json" else "repr"
    if isinstance(value, Namespace):
        attrs = object.__getattribute__(value, "_Namespace__attrs")
        return 13 + _size(attrs, inner, cap, seen, depth)
    if not isinstance(value, (*_CONTAINERS, *_VIEWS)):
        return 200  # a macro, a loop, a range: a short <...> repr
    key = id(value)
    if key in seen:
        return seen[key]
    if depth >= _DEEPEST:
        raise LimitExceeded(f"a list or mapping nested more than {_DEEPEST} deep cannot be printed")
    seen[key] = 0  # while it is counted: a namespace that holds itself adds nothing
    items: Iterable[Any] = value.items() if isinstance(value, dict) else value
    total = 30  # brackets, a view's or a set's name
    for item in items:
        total += 4 + _size(item, inner, cap, seen, depth + 1)  # ", " and ": "
        if total > cap:
            break
    seen[key] = total
    return total


def _quoted(text: str, mode: Mode) -> int:
    """The length of ``repr(text)`` (or its JSON string) at most."""
    if mode == "json":
        if not text.isascii():
            # \uXXXX for each character, a surrogate pair beyond the BMP.
            return (12 if max(text) > "\uffff" else 6) * len(text) + 2
        special = sum(text.count(c) for c in "<>&'")  # htmlsafe: \u003c ...
        controls = 0 if text.isprintable() else sum(text.count(c) for c in _CONTROLS)
        return (
            len(text)
            + 2
            + text.count('"')
            + text.count("\\")
            + 5 * (special + controls)
            + (text.count("\n") + text.count("\t") + text.count("\r"))
        )
    extra = text.count("\\") + text.count("'") + text.count('"')
    if text.isprintable():
        return len(text) + 2 + extra
    if not text.isascii():
        return 10 * len(text) + 2  # \U0001xxxx at most
    controls = sum(text.count(c) for c in _CONTROLS)
    newlines = text.count("\n") + text.count("\t") + text.count("\r")
    return len(text) + 2 + extra + newlines + 3 * controls


def _text_size(meter: Meter, value: Any, mode: Mode = "str") -> int:
    return printed_size(value, meter.room() + 1, mode)


# -- operators and methods ---------------------------------------------------------------


def check_binop(meter: Meter, operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, _SIZED) and isinstance(times, int):
                if times > 0:
                    each = _text_size(meter, seq)
                    what = f"repeating {kind(seq)} {times:,} times"
                    meter.allow(each * times, what, estimated=not isinstance(seq, str))
        if is_int(left) and is_int(right):
            allow_digits(_digits(left) + _digits(right), "multiplying these integers")
    elif operator == "**":
        if is_int(left) and is_int(right) and right > 0 and abs(left) > 1:
            allow_digits(math.ceil(right * math.log10(abs(left))), f"{left} ** {right:,}")
    elif operator == "+":
        if isinstance(left, _SIZED) and isinstance(right, _SIZED):
            size = _text_size(meter, left) + _text_size(meter, right)
            estimated = not (isinstance(left, str) and isinstance(right, str))
            meter.allow(size, f"adding {kind(left)} to {kind(right)}", estimated=estimated)
    elif operator == "%" and isinstance(left, str):
        mode: Mode = "repr" if "%r" in left or "%a" in left else "str"
        # A dict's %(name)s may name one value many times; its size bounds each.
        values = right if isinstance(right, tuple) else (right,)
        largest = max((_text_size(meter, v, mode) for v in values), default=0)
        size = len(left) + _printf_widths(left, right) + left.count("%") * largest
        estimated = not all(isinstance(v, str) for v in values)
        meter.allow(size, "% formatting with these widths and values", estimated=estimated)


def check_method(
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
        values = [*args, *kwargs.values()]
        values += [v for a in args if isinstance(a, dict) for v in a.values()]  # format_map
        mode: Mode = "repr" if "!r" in text or "!a" in text else "str"
        largest = max((_text_size(meter, v, mode) for v in values), default=0)
        size = len(text) + _format_widths(text, args, kwargs) + text.count("{") * largest
        estimated = not all(isinstance(v, str) for v in values)
        meter.allow(size, f"str.{name} of these values", estimated=estimated)
    elif name in ("center", "ljust", "rjust", "zfill") and is_int(first):
        meter.allow(first, f"str.{name}({first:,})")
    elif name == "replace" and len(args) >= 2:
        meter.allow(_replaced(text, args[0], args[1]), "str.replace")
    elif name == "join" and args:
        items = sized(meter, args[0])
        meter.allow(_joined(meter, items, text), "str.join", estimated=_holds_more(items))
        args = (items, *args[1:])
    elif name == "expandtabs":
        tabsize = first if args else kwargs.get("tabsize", 8)
        if is_int(tabsize):
            meter.allow(len(text) + text.count("\t") * max(tabsize, 0), "str.expandtabs")
    elif name == "translate" and isinstance(first, dict):
        longest = max((len(v) for v in first.values() if isinstance(v, str)), default=1)
        meter.allow(len(text) * longest, "str.translate")
    elif name == "encode":
        meter.allow(4 * len(text), "str.encode")
    return args


def check_slice(meter: Meter, obj: Any, argument: Any) -> None:
    """``text[i:j]`` copies what it selects."""
    if isinstance(argument, slice) and isinstance(obj, (str, list, tuple, bytes)):
        size = len(range(*argument.indices(len(obj))))
        meter.allow(size, "taking this slice")


# -- filters -------------------------------------------------------------------------------


def check_filter(meter: Meter, name: str, values: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not values:
        return
    value, rest = values[0], values[1:]
    if name == "pprint":
        # pformat tries each level in one line before breaking it up.
        meter.allow(2 * _text_size(meter, value, "repr"), "|pprint", estimated=True)
        return
    if name == "tojson":
        meter.allow(_text_size(meter, value, "json"), "|tojson", estimated=True)
        return
    if name == "list" and isinstance(value, str):
        meter.allow(len(value), "|list of text")
    if name in _PRINTING_FILTERS and not isinstance(value, str):
        meter.allow(_text_size(meter, value), f"|{name} of {kind(value)}", estimated=True)
        value = None  # what it prints is estimated; the rest below is for text
    text = value if isinstance(value, str) else None

    def argument(index: int, key: str, default: Any) -> Any:
        return rest[index] if len(rest) > index else kwargs.get(key, default)

    if name in ("center", "batch", "slice"):
        # A width or count: center pads to it, batch and slice fill up to it.
        size = argument(0, {"center": "width", "batch": "linecount"}.get(name, "slices"), 0)
        if is_int(size):
            meter.allow(size, f"|{name}({size:,})")
    elif name in ("e", "escape", "forceescape") and text is not None:
        specials = sum(text.count(c) for c in "&<>'\"")
        meter.allow(len(text) + 4 * specials, f"|{name}")
    elif name == "urlencode" and text is not None:
        meter.allow((3 if text.isascii() else 12) * len(text), "|urlencode")
    elif name == "replace" and text is not None:
        meter.allow(_replaced(text, argument(0, "old", ""), argument(1, "new", "")), "|replace")
    elif name == "join":
        size = _joined(meter, values[0], str(argument(0, "d", "")))
        meter.allow(size, "|join", estimated=_holds_more(values[0]))
    elif name == "indent" and text is not None:
        width = argument(0, "width", 4)
        per_line = len(width) if isinstance(width, str) else width if is_int(width) else 0
        meter.allow(len(text) + (text.count("\n") + 1) * max(per_line, 0), "|indent")
    elif name == "wordwrap" and text is not None:
        width = argument(0, "width", 79)
        wrap = argument(2, "wrapstring", None) or "\n"
        lines = len(text) // max(width if is_int(width) else 1, 1) + 1
        meter.allow(len(text) + lines * len(str(wrap)), "|wordwrap")
    elif name == "format" and text is not None:
        largest = max((_text_size(meter, v) for v in (*rest, *kwargs.values())), default=0)
        size = len(text) + _printf_widths(text, rest or kwargs) + text.count("%") * largest
        meter.allow(size, "|format", estimated=True)


# -- helpers -------------------------------------------------------------------------------


def sized(meter: Meter, items: Any) -> Any:
    """``items`` with a length: an iterator (``map``, ``select``) is read into
    a list, one step per item, so that joining it can be estimated."""
    if isinstance(items, (*_CONTAINERS, str)) or not isinstance(items, Iterable):
        return items
    listed = []
    for item in items:
        meter.step()
        listed.append(item)
    return listed


def _holds_more(items: Any) -> bool:
    """Whether joining ``items`` prints more than text (lists, numbers)."""
    return isinstance(items, _CONTAINERS) and not all(isinstance(i, str) for i in items)


def _joined(meter: Meter, items: Any, separator: str) -> int:
    if isinstance(items, str):
        return len(items) + len(separator) * max(len(items) - 1, 0)
    if not isinstance(items, _CONTAINERS):
        return 0
    room = meter.room() + 1
    size = len(separator) * max(len(items) - 1, 0)
    for item in items:  # each item is printed with str()
        size += printed_size(item, room)
        if size > room:
            break
    return size


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
            if is_int(value):
                total += max(value, 0)
    return total


def _format_widths(template: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Characters that widths and precisions in ``{:>20}`` fields may add."""
    total = sum(int(n) for spec in _FORMAT_SPEC.findall(template) for n in _NUMBER.findall(spec))
    if _NESTED_FIELD.search(template):  # ``{:{}}`` takes its width from the arguments
        values = [*args, *kwargs.values()]
        values += [v for a in args if isinstance(a, dict) for v in a.values()]  # format_map
        total += sum(max(v, 0) for v in values if is_int(v))
    return total


def contained(args: Iterable[Any], kwargs: dict[str, Any]) -> int:
    """Items in list, tuple, dict and set arguments: what a call may iterate."""
    values = [*args, *kwargs.values()]
    return sum(len(v) for v in values if isinstance(v, _CONTAINERS))


def allow_digits(digits: int, what: str) -> None:
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


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def kind(value: Any) -> str:
    return "text" if isinstance(value, str) else type(value).__name__
