"""Seeded fault injection for the simulated API server, for reliability tests.

A controller is only as good as its behaviour when the API server misbehaves: 5xx and 429
responses, slow calls, watches that drop, `410 Gone` on resume, an API server that is briefly
down. A fault plan describes such misbehaviour declaratively and reproducibly: every random
choice comes from `random.Random` streams derived from one seed, so a failing run can be
replayed with the same seed.

The server calls `FaultPlan.decide()` once per request and applies the returned `Decision`
in this order: wait `delay` seconds; if `reset_connection`, drop the connection without an
answer; if `error`, answer with it; for a watch, if `gone`, answer 410 Gone (as for a too old
resourceVersion); otherwise serve the request and, for a watch, close the stream after
`watch_cut_after` events. Separately, if `compaction_interval` is set, the server drops its
watch history older than "now" every that many seconds, so resuming watches get 410 Gone.

File format (YAML or JSON, every key optional)::

    seed: 42                     # default 0; a seed passed in code (e.g. --fault-seed) wins
    rules:                       # evaluated in order, every matching rule applies
      - name: flaky-writes       # used in error messages; default "rules[<index>]"
        match:                   # omitted: the rule matches every request
          verb: [create, update, patch]  # a verb or a list: get, list, watch, create, update,
                                         # patch, delete, deletecollection, or "*" (default)
          resource: [pods, batch/jobs]   # a plural (any group), group/plural, core/plural for
                                         # the legacy group, group/* or "*" (default)
          namespace: [default]           # a namespace or a list; omitted: any namespace
        error:                   # answer with an error instead of serving the request
          code: 503              # 500, 503, 429 or 409
          probability: 0.1       # default 1
          retryAfter: 2          # seconds, Retry-After header; 429 (default 1) or 503 only
          message: "..."         # optional; default is the message a real server sends
        latency:                 # add a delay before the request is handled
          seconds: 0.2           # a fixed delay, or:
          # min: 0.05            # a delay drawn uniformly from [min, max]
          # max: 0.5
          probability: 0.5       # default 1
        watchCut:                # watch only: close the stream early (clients must re-watch)
          afterEvents: 100       # after this many events (>= 1), for a `probability` share
          probability: 1.0       # of the matching watches (default 1); or instead:
          # perEventProbability: 0.01  # every event may be the last one with this chance
        gone:                    # watch only: refuse to start the watch with 410 Gone
          probability: 0.2
    compaction:
      everySeconds: 30           # drop watch history older than now, every 30 seconds
    outage:                      # a mapping, or a list of them for several windows
      start: 10                  # seconds after the plan is armed (server start)
      duration: 5                # seconds
      mode: error                # "error": every request gets 503; "reset": connection reset
      match: {...}               # optional, as in rules; default every request

When several rules match: the first error that fires wins, delays add up, the smallest watch
cut wins, and any firing `gone` applies. During an outage no rule is evaluated.

Each rule and each of its actions draws from its own random stream (derived from the seed,
the rule's index and the action), and draws a fixed number of values per matching request.
So a rule's decisions depend only on the requests it matches: adding a rule for other
resources, or extra traffic elsewhere, does not change them.

A plan is used from the server's event loop only; it is not thread-safe.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kubesim.apiserver.faultfile import (
    NO_FAULT,
    Decision,
    ErrorAction,
    FaultConfigError,
    GoneAction,
    LatencyAction,
    Match,
    Outage,
    Rule,
    WatchCutAction,
    parse_plan,
    read_plan_file,
)
from kubesim.machinery.errors import ApiError

__all__ = [
    "NO_FAULT",
    "Decision",
    "ErrorAction",
    "FaultConfigError",
    "FaultPlan",
    "GoneAction",
    "LatencyAction",
    "Match",
    "Outage",
    "Rule",
    "WatchCutAction",
    "load_faults",
]

# --------------------------------------------------------------------------------------------
# The plan


class _RuleState:
    """A rule with its private random streams, one per action."""

    __slots__ = ("error_rng", "gone_rng", "latency_rng", "rule", "watch_rng")

    def __init__(self, rule: Rule, seed: int, index: int) -> None:
        self.rule = rule
        # String seeds are hashed with SHA-512 by `random`, so streams are stable across
        # processes regardless of PYTHONHASHSEED.
        self.error_rng = random.Random(f"{seed}/{index}/error")
        self.latency_rng = random.Random(f"{seed}/{index}/latency")
        self.watch_rng = random.Random(f"{seed}/{index}/watchCut")
        self.gone_rng = random.Random(f"{seed}/{index}/gone")


class FaultPlan:
    """Decides, per request, which faults to inject. An empty plan injects nothing."""

    def __init__(
        self,
        seed: int = 0,
        rules: Iterable[Rule] = (),
        outages: Iterable[Outage] = (),
        compaction_interval: float | None = None,
    ) -> None:
        self.seed = seed
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.outages: tuple[Outage, ...] = tuple(outages)
        self.compaction_interval = compaction_interval
        self._states = tuple(_RuleState(r, seed, i) for i, r in enumerate(self.rules))
        self._armed_at: float | None = None
        self._counts: dict[str, int] = {}

    @staticmethod
    def from_dict(
        d: Mapping[str, Any] | None, seed: int | None = None, source: str = "faults"
    ) -> FaultPlan:
        """Build a plan from parsed YAML/JSON; `seed`, if given, overrides the file's."""
        spec = parse_plan(d, seed, source)
        return FaultPlan(spec.seed, spec.rules, spec.outages, spec.compaction_interval)

    @property
    def enabled(self) -> bool:
        """False for a plan that can never inject anything, so the server can skip it."""
        return bool(self.rules or self.outages or self.compaction_interval)

    def arm(self, now: float) -> None:
        """Start the clock that outage windows are measured from (call at server start).

        If never called, the first `decide()` arms the plan.
        """
        self._armed_at = now

    @property
    def counts(self) -> dict[str, int]:
        """Faults injected so far, by kind (e.g. `error_503`, `latency`, `watch_cut`, `gone`,
        `outage_error`, `outage_reset`, `compaction`): a copy, for tests and metrics."""
        return dict(self._counts)

    def record(self, kind: str, n: int = 1) -> None:
        """Count a fault the server carried out itself (e.g. `compaction`)."""
        self._counts[kind] = self._counts.get(kind, 0) + n

    def outage_active(
        self, verb: str, group: str, resource: str, namespace: str, now: float
    ) -> bool:
        """Whether an outage window covers such a request now (the server ends open watches
        when one starts: a real API server that goes away drops its streams too)."""
        if not self.outages or self._armed_at is None:
            return False
        elapsed = now - self._armed_at
        return any(
            o.active(elapsed) and o.match.matches(verb, group, resource, namespace)
            for o in self.outages
        )

    def decide(
        self,
        verb: str,
        group: str,
        resource: str,
        namespace: str,
        now: float,
        name: str = "",
    ) -> Decision:
        """The faults to inject into one request. `now` is a monotonic clock reading."""
        if not self.rules and not self.outages:
            return NO_FAULT
        if self._armed_at is None:
            self._armed_at = now
        elapsed = now - self._armed_at
        for outage in self.outages:
            if outage.active(elapsed) and outage.match.matches(verb, group, resource, namespace):
                if outage.mode == "reset":
                    self.record("outage_reset")
                    return Decision(reset_connection=True)
                self.record("outage_error")
                return Decision(
                    error=ApiError(
                        503,
                        "ServiceUnavailable",
                        "the server is currently unable to handle the request",
                    )
                )

        error: ApiError | None = None
        delay = 0.0
        cut: int | None = None
        gone = False
        is_watch = verb == "watch"
        for state in self._states:
            rule = state.rule
            if not rule.match.matches(verb, group, resource, namespace):
                continue
            if rule.error is not None:
                # Draw on every match, even when an earlier rule already failed the request,
                # so that this rule's stream does not depend on the other rules.
                fires = state.error_rng.random() < rule.error.probability
                if fires and error is None:
                    error = rule.error.make_error(group, resource, name)
                    self.record(f"error_{rule.error.code}")
            if rule.latency is not None:
                lat = rule.latency
                fires = state.latency_rng.random() < lat.probability
                amount = lat.low + (lat.high - lat.low) * state.latency_rng.random()
                if fires and amount > 0:
                    delay += amount
                    self.record("latency")
            if is_watch and rule.watch_cut is not None:
                after = _draw_cut(rule.watch_cut, state.watch_rng)
                if after is not None:
                    cut = after if cut is None else min(cut, after)
            if is_watch and rule.gone is not None:
                if state.gone_rng.random() < rule.gone.probability:
                    gone = True
        # Count only what the server will carry out: an error pre-empts a watch altogether,
        # and a 410 Gone means the stream never starts, so it cannot be cut.
        if gone and error is None:
            self.record("gone")
        elif cut is not None and error is None:
            self.record("watch_cut")
        if error is None and delay == 0.0 and cut is None and not gone:
            return NO_FAULT
        return Decision(error=error, delay=delay, watch_cut_after=cut, gone=gone)


def _draw_cut(action: WatchCutAction, rng: random.Random) -> int | None:
    """How many events a watch may carry before it is cut, or None to leave it alone."""
    u = rng.random()
    if action.per_event_probability is not None:
        q = action.per_event_probability
        if q <= 0.0:
            return None
        if q >= 1.0:
            return 1
        # Geometric: each event is the last one with probability q.
        return max(1, math.ceil(math.log1p(-u) / math.log1p(-q)))
    if u < action.probability:
        return action.after_events
    return None


def load_faults(path: str | Path, seed: int | None = None) -> FaultPlan:
    """Read a faults file (YAML or JSON); `seed`, if given, overrides the file's seed."""
    p = Path(path)
    return FaultPlan.from_dict(read_plan_file(p), seed, str(p))
