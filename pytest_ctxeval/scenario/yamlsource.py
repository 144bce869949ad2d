"""Safe YAML with positions: the node tree (for line numbers), the data, and
``!include`` of other YAML or text files that cannot leave the scenario root.

Loading is bounded (see limits.py): nesting depth, and the values and text a
file amounts to once aliases and includes are expanded, are counted before
anything is constructed, so a "billion laughs" of nested aliases is refused
before anything is expanded.  Timestamps are never constructed: ``2024-01-01``
stays the string it looks like, and ``2001-13-45`` is not an error.

When PyYAML has libyaml, libyaml composes the node tree in C (it refuses
nesting deeper than 1,000 itself) and one pass over that tree counts and
bounds it as the pure-Python loader does while composing.  A file the C path
refuses, for any reason (a limit included), is loaded again by the
pure-Python loader: its error messages are the ones users see, and a file the
C parser alone rejects still loads.  What libyaml alone would accept (a tab
after a colon, a "?" in a flow collection's plain text) takes the pure-Python
path too, so what loads never depends on how PyYAML was built."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.reader import Reader

from ..textcap import surrogate_problem
from .errors import NotAScenario, ScenarioError
from .limits import Limits
from .yamlbounds import _Budget as _Budget
from .yamlbounds import _WholeFileProblem
from .yamlloaders import CParser as CParser
from .yamlloaders import _Loader
from .yamlnodes import Loc as Loc
from .yamlnodes import _reject_duplicate_keys, _reject_surrogates
from .yamlnodes import find_node as find_node
from .yamlnodes import position as position

if CParser is not None:
    from .yamlloaders import _CLoader as _CLoader


def parse_yaml(
    text: str,
    display: str,
    *,
    base_dir: Path,
    root: Path,
    limits: Limits | None = None,
    budget: _Budget | None = None,
    chain: tuple[Path, ...] = (),
    level: int = 0,
    depth_offset: int = 0,
    only_if: Callable[[yaml.Node], bool] | None = None,
) -> tuple[yaml.Node, Any]:
    """The node tree and the data of one YAML document, or ScenarioError.
    ``chain`` holds the file itself when it is read from one (for include
    cycles); ``budget`` is shared with the files it includes.  ``only_if``:
    NotAScenario unless the composed tree passes it, before anything is
    constructed (one composing both decides and loads)."""
    budget = budget or _Budget(limits or Limits.from_env())
    context = (display, base_dir, root, budget, chain, level, depth_offset, only_if)
    if use_c_parser and CParser is not None and _c_parser_reads_alike(text):
        spent = budget.spent()
        try:
            return _load(_CLoader, text, *context)
        except NotAScenario:
            raise
        except Exception:  # noqa: BLE001 - the pure-Python loader says what is wrong
            budget.refund(spent)
    try:
        return _load(_Loader, text, *context)
    except _WholeFileProblem as exc:
        if level:
            raise  # reported at the include line of the file being loaded
        where = exc.mark
        raise ScenarioError.at(display, where.line + 1, where.column + 1, exc.message) from None
    except yaml.reader.ReaderError as exc:
        line, col = _line_column(text, exc.position)
        raise ScenarioError.at(display, line, col, _unprintable(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ScenarioError.at(display, line, col, f"invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError.at(display, 1, 1, f"invalid YAML: {exc}") from None
    except RecursionError:
        # Not expected within the depth limit; never a traceback all the same.
        raise ScenarioError.at(display, 1, 1, "invalid YAML: nested too deeply to read") from None


# Whether parse_yaml tries libyaml's parser first (tests compare the two paths).
use_c_parser = True


def _c_parser_reads_alike(text: str) -> bool:
    """Whether libyaml reads ``text`` as the pure-Python parser does.  It is
    laxer with tabs ("a:<TAB>b" loads) and with some characters the Python
    reader refuses; such files take the Python path, so that what loads and
    what is refused does not depend on how PyYAML was built."""
    if "\t" in text:
        return False
    if text.isascii():  # most files: their non-printables are the ASCII controls
        return not text.encode("ascii").translate(None, _PRINTABLE_ASCII)
    return not Reader.NON_PRINTABLE.search(text)


# What the Python reader prints of ASCII (``Reader.NON_PRINTABLE``'s complement);
# deleting it leaves the controls, in C and four times as fast as the regex.
_PRINTABLE_ASCII = b"\t\n\r" + bytes(range(0x20, 0x7F))


def _load(
    loader_class: Any,
    text: str,
    display: str,
    base_dir: Path,
    root: Path,
    budget: _Budget,
    chain: tuple[Path, ...],
    level: int,
    depth_offset: int,
    only_if: Callable[[yaml.Node], bool] | None,
) -> tuple[yaml.Node, Any]:
    """One attempt at the document with one loader class; its errors raw."""
    loader: Any = None
    try:
        loader = loader_class(text)
        loader.budget, loader.base_dir, loader.root, loader.display = (
            budget,
            base_dir,
            root.resolve(),
            display,
        )
        loader.chain, loader.level, loader.depth_offset = chain, level, depth_offset
        loader.parse_nested = parse_yaml
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError.at(display, 1, 1, "empty file: expected a scenario mapping")
        if only_if is not None and not only_if(node):
            raise NotAScenario(display)
        _reject_duplicate_keys(node, display)
        if _may_make_surrogates(text):
            _reject_surrogates(node, display)
        data = loader.construct_document(node)
    finally:
        if loader is not None:
            loader.dispose()
    return node, data


def _may_make_surrogates(text: str) -> bool:
    """Whether a value of ``text`` can hold a lone surrogate: only a ``\\u``
    or ``\\U`` escape makes one (text read from a file cannot hold one
    itself), so a file without such an escape is not walked value by value."""
    return "\\u" in text or "\\U" in text or surrogate_problem(text) is not None


def _unprintable(exc: yaml.reader.ReaderError) -> str:
    character = exc.character
    code = ord(character) if isinstance(character, str) else int(character)
    name = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL"}.get(code, "control character")
    return (
        f"invalid YAML: character U+{code:04X} ({name}) is not allowed in a YAML file; "
        f'remove it, or write it as "\\x{code:02x}" inside a double-quoted string'
        if code < 0x100
        else f"invalid YAML: character U+{code:04X} is not allowed in a YAML file; remove it"
    )


def _line_column(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1
