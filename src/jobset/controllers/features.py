"""`--feature-gates K=V,...`: upstream's alpha/beta switches, spelled as upstream spells them.

Unknown names and non-boolean values are errors (a typo must not silently leave a gate off).
GA gates are locked to their default, as component-base locks them.
"""

from __future__ import annotations

from jobset.api import constants as c

__all__ = ["LOCKED_FEATURE_GATES", "parse_feature_gates"]

LOCKED_FEATURE_GATES: frozenset[str] = frozenset({c.FEATURE_TLS_OPTIONS})


def parse_feature_gates(spec: str) -> dict[str, bool]:
    """The full gate map: defaults overridden by `spec` ("RestartJob=true,Foo=false")."""
    gates = dict(c.DEFAULT_FEATURE_GATES)
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"missing bool value for feature gate {name!r}")
        if name not in gates:
            known = ", ".join(sorted(gates))
            raise ValueError(f"unrecognized feature gate: {name} (known: {known})")
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError(f"invalid value of {name}={value}, err: must be true or false")
        enabled = lowered == "true"
        if name in LOCKED_FEATURE_GATES and enabled != gates[name]:
            raise ValueError(f"cannot set feature gate {name} to {enabled}, feature is locked")
        gates[name] = enabled
    return gates
