"""Statistics over counters: the Wilson score interval."""

from __future__ import annotations

import math

DEFAULT_Z = 1.959963984540054  # two-sided 95%, agent-release-gate §7.1


def wilson(passed: int, n: int, z: float = DEFAULT_Z) -> tuple[float, float] | None:
    """Wilson score interval for ``passed`` of ``n``; None when n is 0.

    Computed in IEEE doubles in the order the release-gate protocol prescribes.
    """
    if n == 0:
        return None
    p = passed / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)
