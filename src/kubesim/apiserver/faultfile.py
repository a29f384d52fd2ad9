"""The parts of a fault plan (`faults.py`: matches, actions, outage windows, the decision for
one request) and the checking of a faults file, with errors of the form
`<file>: <key.path>: <problem>`."""

from __future__ import annotations

import json
import math
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
    "GoneAction",
    "LatencyAction",
    "Match",
    "Outage",
    "PlanSpec",
    "Rule",
    "WatchCutAction",
    "parse_plan",
    "read_plan_file",
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


@dataclass(frozen=True)
class PlanSpec:
    """What a faults document says: the seed, rules, outage windows, compaction interval."""

    seed: int
    rules: tuple[Rule, ...]
    outages: tuple[Outage, ...]
    compaction_interval: float | None


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


def parse_plan(d: Mapping[str, Any] | None, seed: int | None, source: str) -> PlanSpec:
    """The plan a parsed faults document describes; `seed`, if given, overrides its own."""
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
    return PlanSpec(seed, tuple(rules), tuple(outages), compaction)


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


def read_plan_file(path: Path) -> Any:
    """A faults file (YAML or JSON), parsed but not yet checked."""
    p = path
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
    return data
