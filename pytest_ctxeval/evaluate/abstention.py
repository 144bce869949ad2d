"""Whether an answer declines to answer: "I don't know", "that was never
mentioned", "there is no record of it".

Model-free, for questions about things a conversation never said (LoCoMo's
adversarial category): the right answer is an abstention.  The phrasings
are matched as words, ignoring case and typographic apostrophes; a phrase
must say that the *answer* is unknown or unstated, so "Ben doesn't know how
to swim" or "she never said no to a walk" are not abstentions.  A whole
answer that is a short form ("Unknown.", "N/A", "Not mentioned") is one.
A reply that goes on, after what it does not know, to give an answer ("I
don't know where he hid it, but it is in her slipper.") is an answer: the
part after the last "but" / "however" (after a comma or a full stop) decides.
"""

from __future__ import annotations

import re

_NEGATED = r"(?:\bnot|\bnever|n't|\bnowhere)"
_STATED = (
    r"(?:mentioned|stated|specified|discussed|said|provided|indicated|recorded|shared|"
    r"disclosed|addressed|covered|revealed|noted|brought up|talked about|given in)"
)
_PHRASES = (
    # "I don't know", "we do not know", "I'm not sure", "I am unsure"
    r"\b(?:i|we)\s+(?:do\s+not|don't|dont|did\s+not|didn't)\s+know\b",
    r"\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:not\s+(?:sure|certain|aware)|unsure|uncertain)\b",
    r"\bno\s+idea\b",
    # "not mentioned", "never stated", "wasn't discussed", "isn't specified"
    rf"{_NEGATED}\s+(?:(?:been|ever|actually|explicitly|clearly|directly|once)\s+){{0,2}}"
    rf"{_STATED}\b(?!\s+(?:no|yes)\b)",
    # "doesn't say", "did not mention", "never told us"
    r"\b(?:does|did|do|has|have|had)\s*(?:not|n't)\s+(?:say|mention|specify|state|"
    r"discuss|indicate|reveal|tell|talk\s+about|come\s+up|share|include|contain)\b",
    r"\bnever\s+(?:says|said|mentions|mentioned|tells|told\s+(?:me|us)|came\s+up)\b"
    r"(?!\s+(?:no|yes)\b)",
    # "no information", "there is no record", "no mention of"
    r"\bno\s+(?:(?:such|specific|relevant|explicit|clear)\s+)?(?:information|info|mention|"
    r"record|records|indication|evidence|details?|data|reference|knowledge)\b",
    r"\bnothing\s+(?:is|was|has\s+been|had\s+been)?\s*(?:mentioned|said|stated|recorded)\b",
    r"\bnothing\s+(?:in|about\s+(?:this|that|it)\s+in)\s+(?:the|our)\s+conversation\b",
    # "cannot determine", "can't tell", "unable to find", "could not find"
    r"\b(?:cannot|can\s+not|can't|cant|could\s+not|couldn't|unable\s+to|not\s+able\s+to)"
    r"\s+(?:\w+\s+)?(?:determine|find|tell|say|answer|know|confirm|identify|recall|locate|"
    r"be\s+determined|be\s+found|be\s+answered)\b",
    r"\b(?:unanswerable|not\s+answerable)\b",
    r"\b(?:is|are|was|were|remains?|it's|that's)\s+(?:still\s+)?(?:unknown|unclear|undetermined|"
    r"not\s+known)\b",
    r"\bno\s+way\s+to\s+(?:know|tell)\b",
    r"\b(?:not|isn't|wasn't)\s+(?:in|part\s+of|covered\s+(?:in|by))\s+(?:the|our|this)\s+"
    r"(?:conversation|chat|transcript|record|context)\b",
)
ABSTENTION = re.compile("|".join(f"(?:{p})" for p in _PHRASES), re.IGNORECASE)
# A whole answer that is only a short form: "Unknown.", "N/A", "None given".
SHORT_FORM = re.compile(
    r"^\W*(?:unknown|n\s*/\s*a|not\s+(?:mentioned|stated|specified|known|given|available|"
    r"provided|said)|none\s+(?:given|mentioned|stated)|no\s+(?:answer|information|info|"
    r"information\s+available|mention))\W*$",
    re.IGNORECASE,
)
# Where a reply turns to an answer after saying what it does not know:
# "I don't know where he hid it, but it is in her slipper."
_CONTRAST = re.compile(
    r"(?:[,;:]\s*|\s+-+\s+|(?<=[.!?])\s+)(?:but|however|though|although|yet|still)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")
# Typographic apostrophes a model may use for the plain one in the phrases.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def abstains(answer: str | None) -> bool:
    """Whether ``answer`` says it does not know, or that the conversation
    never said (see the module docstring)."""
    if not answer:
        return False
    text = " ".join(answer.translate(_APOSTROPHES).split())
    if SHORT_FORM.match(text):
        return True
    # The part after the last turn ("..., but ...") decides: a reply that turns
    # from what it does not know to an answer answers.
    parts = [p for p in _CONTRAST.split(text) if _WORD.search(p)]
    last = parts[-1] if parts else text
    return ABSTENTION.search(last) is not None or SHORT_FORM.match(last) is not None
