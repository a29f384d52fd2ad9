"""The runtime cost of a CEL evaluation and kube-apiserver's limits on it.

kube-apiserver runs every CEL program with cel-go's cost tracker: each evaluation step
costs about one unit, a call also costs in proportion to the size of the strings, lists and
maps it is given, and an evaluation that passes the per-call limit is cancelled with
"operation cancelled: actual cost limit exceeded". A CRD's rules (and a policy's
expressions) for one request also share a budget; the caller keeps it, charging each
evaluation's actual cost (`CostTracker.cost`). The units here follow cel-go's model in shape
(steps, plus a tenth of a unit per string byte and one per list or map element a call reads),
not to the unit: they bound the same kind of work, so an expression that kube-apiserver
cancels is cancelled here too, and one it runs in a fraction of its budget runs here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "COST_LIMIT_MESSAGE",
    "PER_CALL_LIMIT",
    "RUNTIME_COST_BUDGET",
    "CostLimitExceeded",
    "CostTracker",
    "argument_cost",
]

# celconfig.PerCallLimit: the most one evaluation of one expression may cost.
PER_CALL_LIMIT: Final = 1_000_000
# celconfig.RuntimeCELCostBudget: what all the rules validating one object may cost together.
RUNTIME_COST_BUDGET: Final = 10_000_000
# cel-go's text when the tracker cancels an evaluation.
COST_LIMIT_MESSAGE: Final = "operation cancelled: actual cost limit exceeded"


class CostLimitExceeded(Exception):
    """Raised out of an evaluation (never turned into a CEL error value, which `||`, `&&`,
    `all()` and `exists()` would absorb) when its cost passes the limit."""


class CostTracker:
    """The cost of one evaluation so far; raises `CostLimitExceeded` past `limit`."""

    __slots__ = ("cost", "limit")

    def __init__(self, limit: int = PER_CALL_LIMIT) -> None:
        self.cost = 0
        self.limit = limit

    def add(self, units: int) -> None:
        self.cost += units
        if self.cost > self.limit:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)


def argument_cost(value: object) -> int:
    """What reading one argument of a call costs beyond the call itself: a tenth of a unit
    per byte of a string (rounded up), a unit per element of a list or map."""
    if isinstance(value, str | bytes):
        return (len(value) + 9) // 10
    if isinstance(value, list | dict):
        return len(value)
    return 0
