"""Where the answer matching lived before it moved below the scenario layer
(``pytest_ctxeval.text``): the names stay importable from here."""

from __future__ import annotations

from ..text import SHORT_WORD, normalise_expected, normalise_text, occurs, same_answer

__all__ = ["SHORT_WORD", "normalise_expected", "normalise_text", "occurs", "same_answer"]
