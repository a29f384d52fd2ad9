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

import json
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from kubesim.machinery.errors import ApiError, conflict

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

VERBS: Final = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)
ERROR_CODES: Final = (409, 429, 500, 503)


class FaultConfigError(ValueError):
    """A faults file that cannot be used; the message names the file and the bad key."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do to one request. The default instance means: serve it normally."""

    error: ApiError | None = None
    delay: float = 0.0
    watch_cut_after: int | None = None
    gone: bool = False
    reset_connection: bool = False

    @property
    def is_noop(self) -> bool:
        return (
            self.error is None
            and self.delay == 0.0
            and self.watch_cut_after is None
            and not self.gone
            and not self.reset_connection
        )


NO_FAULT: Final = Decision()


# --------------------------------------------------------------------------------------------
# The plan's parts


@dataclass(frozen=True, slots=True)
class Match:
    """Which requests a rule or outage applies to; None means "any"."""

    verbs: frozenset[str] | None = None
    # (group or None for any group, plural or None for any plural)
    resources: tuple[tuple[str | None, str | None], ...] | None = None
    namespaces: frozenset[str] | None = None

    def matches(self, verb: str, group: str, resource: str, namespace: str) -> bool:
        if self.verbs is not None and verb not in self.verbs:
            return False
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        if self.resources is not None:
            for g, r in self.resources:
                if (g is None or g == group) and (r is None or r == resource):
                    return True
            return False
        return True


@dataclass(frozen=True, slots=True)
class ErrorAction:
    code: int
    probability: float = 1.0
    retry_after: int | None = None
    message: str | None = None

    def make_error(self, group: str, resource: str, name: str) -> ApiError:
        """The error a real API server would send for this code."""
        if self.code == 409:
            err = conflict(
                group,
                resource,
                name,
                "the object has been modified; please apply your changes to the latest "
                "version and try again",
            )
            if self.message:
                err.message = self.message
            return err
        if self.code == 429:
            reason, message = "TooManyRequests", "Too many requests, please try again later."
        elif self.code == 503:
            reason, message = (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            )
        else:
            reason, message = "InternalError", "Internal error occurred: injected fault"
        headers = {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}
        return ApiError(
            self.code,
            reason,
            self.message or message,
            retry_after=self.retry_after,
            headers=headers,
        )


@dataclass(frozen=True, slots=True)
class LatencyAction:
    low: float
    high: float
    probability: float = 1.0


@dataclass(frozen=True, slots=True)
class WatchCutAction:
    after_events: int | None = None
    probability: float = 1.0
    per_event_probability: float | None = None


@dataclass(frozen=True, slots=True)
class GoneAction:
    probability: float = 1.0


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    match: Match = field(default_factory=Match)
    error: ErrorAction | None = None
    latency: LatencyAction | None = None
    watch_cut: WatchCutAction | None = None
    gone: GoneAction | None = None


@dataclass(frozen=True, slots=True)
class Outage:
    start: float
    duration: float
    mode: Literal["error", "reset"] = "error"
    match: Match = field(default_factory=Match)

    def active(self, elapsed: float) -> bool:
        return self.start <= elapsed < self.start + self.duration


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
        return _parse_plan(d, seed, source)

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


# --------------------------------------------------------------------------------------------
# Parsing and validation


def load_faults(path: str | Path, seed: int | None = None) -> FaultPlan:
    """Read a faults file (YAML or JSON); `seed`, if given, overrides the file's seed."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FaultConfigError(f"{p}: no such faults file") from None
    except OSError as e:
        raise FaultConfigError(f"{p}: cannot read faults file: {e.strerror or e}") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as e:
        raise FaultConfigError(
            f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}"
        ) from None
    return _parse_plan(data, seed, str(p))


class _Ctx:
    """Builds error messages of the form `<file>: <key.path>: <problem>`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> FaultConfigError:
        return FaultConfigError(
            f"{self.source}: {where}: {problem}" if where else f"{self.source}: {problem}"
        )

    def mapping(self, value: Any, where: str, allowed: Iterable[str]) -> Mapping[str, Any]:
        keys = tuple(allowed)
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected a mapping, got {_type_name(value)}")
        for k in value:
            if k not in keys:
                raise self.fail(
                    f"{where}.{k}" if where else str(k),
                    f"unknown key (expected one of: {', '.join(keys)})",
                )
        return value

    def number(
        self,
        m: Mapping[str, Any],
        key: str,
        where: str,
        *,
        default: float | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
    ) -> float:
        path = f"{where}.{key}"
        if key not in m:
            if default is None:
                raise self.fail(path, "required")
            return default
        v = m[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise self.fail(path, f"expected a number, got {v!r}")
        if minimum is not None:
            if exclusive_minimum and v <= minimum:
                raise self.fail(path, f"must be greater than {minimum:g}, got {v!r}")
            if not exclusive_minimum and v < minimum:
                raise self.fail(path, f"must be at least {minimum:g}, got {v!r}")
        if maximum is not None and v > maximum:
            raise self.fail(path, f"must be at most {maximum:g}, got {v!r}")
        return float(v)

    def integer(self, m: Mapping[str, Any], key: str, where: str, *, minimum: int) -> int:
        path = f"{where}.{key}"
        v = m.get(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"expected an integer, got {v!r}")
        if v < minimum:
            raise self.fail(path, f"must be at least {minimum}, got {v}")
        return v

    def probability(self, m: Mapping[str, Any], key: str, where: str) -> float:
        return self.number(m, key, where, default=1.0, minimum=0.0, maximum=1.0)

    def strings(self, value: Any, where: str) -> list[str]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.fail(where, "must not be an empty list")
        for item in items:
            if not isinstance(item, str) or not item:
                raise self.fail(
                    where, f"expected a non-empty string or a list of them, got {item!r}"
                )
        return items


def _type_name(v: Any) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return f"the string {v!r}"
    return type(v).__name__


_PLAN_KEYS: Final = ("seed", "rules", "compaction", "outage")
_RULE_KEYS: Final = ("name", "match", "error", "latency", "watchCut", "gone")
_MATCH_KEYS: Final = ("verb", "resource", "namespace")


def _parse_plan(d: Mapping[str, Any] | None, seed: int | None, source: str) -> FaultPlan:
    ctx = _Ctx(source)
    if d is None:
        d = {}
    top = ctx.mapping(d, "", _PLAN_KEYS)
    if seed is None:
        file_seed = top.get("seed", 0)
        if isinstance(file_seed, bool) or not isinstance(file_seed, int):
            raise ctx.fail("seed", f"expected an integer, got {file_seed!r}")
        seed = file_seed

    raw_rules = top.get("rules", [])
    if not isinstance(raw_rules, list):
        raise ctx.fail("rules", f"expected a list, got {_type_name(raw_rules)}")
    rules = [_parse_rule(ctx, r, f"rules[{i}]") for i, r in enumerate(raw_rules)]

    compaction: float | None = None
    if top.get("compaction") is not None:
        comp = ctx.mapping(top["compaction"], "compaction", ("everySeconds",))
        compaction = ctx.number(
            comp, "everySeconds", "compaction", minimum=0.0, exclusive_minimum=True
        )

    outages: list[Outage] = []
    raw_outage = top.get("outage")
    if raw_outage is not None:
        if isinstance(raw_outage, list):
            outages = [_parse_outage(ctx, o, f"outage[{i}]") for i, o in enumerate(raw_outage)]
        else:
            outages = [_parse_outage(ctx, raw_outage, "outage")]
    return FaultPlan(seed, rules, outages, compaction)


def _parse_rule(ctx: _Ctx, raw: Any, where: str) -> Rule:
    m = ctx.mapping(raw, where, _RULE_KEYS)
    name = m.get("name", where)
    if not isinstance(name, str) or not name:
        raise ctx.fail(f"{where}.name", f"expected a non-empty string, got {name!r}")
    match = _parse_match(ctx, m.get("match"), f"{where}.match")
    error = latency = watch_cut = gone = None

    if "error" in m:
        w = f"{where}.error"
        e = ctx.mapping(m["error"], w, ("code", "probability", "retryAfter", "message"))
        if "code" not in e:
            raise ctx.fail(f"{w}.code", "required")
        code = e["code"]
        if isinstance(code, bool) or code not in ERROR_CODES:
            allowed = ", ".join(str(c) for c in ERROR_CODES)
            raise ctx.fail(f"{w}.code", f"{code!r} is not one of {allowed}")
        retry_after: int | None = None
        if "retryAfter" in e:
            if code not in (429, 503):
                raise ctx.fail(f"{w}.retryAfter", "only allowed with code 429 or 503")
            retry_after = ctx.integer(e, "retryAfter", w, minimum=0)
        elif code == 429:
            retry_after = 1
        message = e.get("message")
        if message is not None and (not isinstance(message, str) or not message):
            raise ctx.fail(f"{w}.message", f"expected a non-empty string, got {message!r}")
        error = ErrorAction(code, ctx.probability(e, "probability", w), retry_after, message)

    if "latency" in m:
        w = f"{where}.latency"
        lat = ctx.mapping(m["latency"], w, ("seconds", "min", "max", "probability"))
        if "seconds" in lat:
            if "min" in lat or "max" in lat:
                raise ctx.fail(w, "give either seconds, or min and max, not both")
            low = high = ctx.number(lat, "seconds", w, minimum=0.0)
        elif "min" in lat or "max" in lat:
            low = ctx.number(lat, "min", w, minimum=0.0)
            high = ctx.number(lat, "max", w, minimum=0.0)
            if high < low:
                raise ctx.fail(f"{w}.max", f"must be at least min ({low:g}), got {high:g}")
        else:
            raise ctx.fail(w, "needs seconds, or min and max")
        latency = LatencyAction(low, high, ctx.probability(lat, "probability", w))

    if "watchCut" in m:
        w = f"{where}.watchCut"
        wc = ctx.mapping(m["watchCut"], w, ("afterEvents", "probability", "perEventProbability"))
        if "perEventProbability" in wc:
            if "afterEvents" in wc or "probability" in wc:
                raise ctx.fail(
                    w, "give either perEventProbability, or afterEvents (and probability)"
                )
            q = ctx.number(wc, "perEventProbability", w, minimum=0.0, maximum=1.0)
            watch_cut = WatchCutAction(per_event_probability=q)
        elif "afterEvents" in wc:
            n = ctx.integer(wc, "afterEvents", w, minimum=1)
            watch_cut = WatchCutAction(
                after_events=n, probability=ctx.probability(wc, "probability", w)
            )
        else:
            raise ctx.fail(w, "needs afterEvents or perEventProbability")

    if "gone" in m:
        w = f"{where}.gone"
        g = ctx.mapping(m["gone"], w, ("probability",))
        gone = GoneAction(ctx.probability(g, "probability", w))

    if error is None and latency is None and watch_cut is None and gone is None:
        raise ctx.fail(where, "no action (expected at least one of error, latency, watchCut, gone)")
    for key, action in (("watchCut", watch_cut), ("gone", gone)):
        if action is not None and match.verbs is not None and "watch" not in match.verbs:
            raise ctx.fail(
                f"{where}.{key}", "applies only to watch requests, but match.verb excludes watch"
            )
    return Rule(name, match, error, latency, watch_cut, gone)


def _parse_match(ctx: _Ctx, raw: Any, where: str) -> Match:
    if raw is None:
        return Match()
    m = ctx.mapping(raw, where, _MATCH_KEYS)
    verbs: frozenset[str] | None = None
    if "verb" in m:
        items = ctx.strings(m["verb"], f"{where}.verb")
        for v in items:
            if v != "*" and v not in VERBS:
                raise ctx.fail(
                    f"{where}.verb",
                    f"unknown verb {v!r} (expected *, {', '.join(sorted(VERBS))})",
                )
        verbs = None if "*" in items else frozenset(items)
    resources: tuple[tuple[str | None, str | None], ...] | None = None
    if "resource" in m:
        items = ctx.strings(m["resource"], f"{where}.resource")
        parsed: list[tuple[str | None, str | None]] = []
        for item in items:
            if item == "*":
                parsed = []
                break
            parts = item.split("/")
            if len(parts) == 1:
                parsed.append((None, parts[0]))
            elif len(parts) == 2 and parts[0] and parts[1]:
                group = "" if parts[0] == "core" else parts[0]
                parsed.append((group, None if parts[1] == "*" else parts[1]))
            else:
                raise ctx.fail(
                    f"{where}.resource",
                    f"{item!r} is not a resource (expected plural, group/plural, "
                    "core/plural, group/* or *)",
                )
        resources = tuple(parsed) if parsed else None
    namespaces: frozenset[str] | None = None
    if "namespace" in m:
        namespaces = frozenset(ctx.strings(m["namespace"], f"{where}.namespace"))
    return Match(verbs, resources, namespaces)


def _parse_outage(ctx: _Ctx, raw: Any, where: str) -> Outage:
    m = ctx.mapping(raw, where, ("start", "duration", "mode", "match"))
    start = ctx.number(m, "start", where, minimum=0.0)
    duration = ctx.number(m, "duration", where, minimum=0.0, exclusive_minimum=True)
    mode = m.get("mode", "error")
    if mode not in ("error", "reset"):
        raise ctx.fail(f"{where}.mode", f"{mode!r} is not one of error, reset")
    match = _parse_match(ctx, m.get("match"), f"{where}.match")
    return Outage(start, duration, "reset" if mode == "reset" else "error", match)
