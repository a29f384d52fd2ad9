"""Kubernetes' semantic equality (apiequality.Semantic.DeepEqual) over JSON values."""

from __future__ import annotations

from typing import Any, Final

from kubeutil.quantity import parse_quantity

__all__ = ["semantic_equal"]

# Where Kubernetes types hold `resource.Quantity` values, which semantic DeepEqual compares
# by amount (`1Gi` == `1024Mi`): maps of quantities, and single quantities.
_QUANTITY_MAPS: Final = frozenset({"requests", "limits", "overhead"})
_QUANTITY_FIELDS: Final = frozenset({"sizeLimit"})


def _quantity(value: Any) -> Any:
    """A quantity's amount, tagged so it cannot equal a plain number (else: the value)."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return ("quantity", parse_quantity(value))
        except ValueError:
            return value  # not a quantity: the schema reports it; compare as written
    return value


def _normalize(value: Any, key: str = "") -> Any:
    """Drop nulls and empty containers, which Go's typed objects cannot tell from absence;
    quantities become their amounts."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if key in _QUANTITY_MAPS:
                nv = _quantity(v)
            elif k in _QUANTITY_FIELDS:
                nv = _quantity(v)
            else:
                nv = _normalize(v, k)
            if nv is None or nv == {} or nv == []:
                continue
            out[k] = nv
        return out
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Equality as Kubernetes' semantic DeepEqual sees two JSON values.

    null, absent, `{}` and `[]` are the same (Go decodes them all to nil / empty). Resource
    quantities compare by amount (`1Gi` equals `1024Mi`, `0.5` equals `500m`), as
    `resource.Quantity` does under apiequality.Semantic.
    """
    na, nb = _normalize(a), _normalize(b)
    if na in ({}, []):
        na = None
    if nb in ({}, []):
        nb = None
    return bool(na == nb)
