"""Which sentences the mock model "attends": lost in the middle, seeded so
that the same request draws the same way."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

# Decides whether the model "attends" a candidate sentence (lost-in-middle);
# arguments: relative position 0..1, a stable key for the random draw.
Attention = Callable[[float, str], bool]


# Liu et al. 2023, "Lost in the Middle", GPT-3.5-Turbo, 20 documents: accuracy
# with the answer at positions 1/5/10/15/20, against 88.3 % with only the
# relevant document.  Attention probability = accuracy / 88.3.
_LIM_POSITIONS = (0.0, 4 / 19, 9 / 19, 14 / 19, 1.0)
_LIM_ACCURACY = (75.8, 57.2, 53.8, 55.4, 63.2)
_LIM_BEST = 88.3


def lost_in_middle_probability(relative_position: float) -> float:
    x = min(max(relative_position, 0.0), 1.0)
    points = list(zip(_LIM_POSITIONS, _LIM_ACCURACY, strict=True))
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            return y / _LIM_BEST
    return _LIM_ACCURACY[-1] / _LIM_BEST


def lost_in_middle_attention(seed: str) -> Attention:
    """Seeded per request (question), so the same probe repeats exactly."""

    def attend(relative_position: float, sentence: str) -> bool:
        digest = hashlib.sha256(f"{seed}\x00{sentence}".encode()).digest()
        draw = random.Random(digest).random()
        return draw < lost_in_middle_probability(relative_position)

    return attend
