"""The controller's check of stored JobSets (`ValidationFailed`): create rules for what
was created, update rules for what was updated.

The admission webhook judges a create by the create rules and an update by the update rules
(upstream's `ValidateCreate` / `ValidateUpdate`). A JobSet stored without the webhook (it was
down, bypassed, or not installed) reaches the controller unjudged; the controller then fails
it with reason `ValidationFailed` instead of erroring on every pass. Judging every generation
by the create rules would also fail a running JobSet after an update the webhook accepted by
the update rules, e.g. an elastic change of `replicas` or `parallelism`. So, per generation:

- generation 1 (never updated): the create rules;
- the generation right after one this controller judged valid: the update rules against that
  one, the pair admission judged;
- any other generation (the controller restarted, or a watch coalesced several updates into
  one event, so the object admission compared it with was never seen): the create rules if
  the controller never wrote a status for the JobSet (it has not run: nothing to break),
  else nothing - such a JobSet is never failed on a guess. Comparing across skipped
  generations would be wrong: two accepted updates (suspend and relabel, then resume) can
  differ from the generation before both by what neither alone changed.

Pure apart from its memory (one verdict and the JobSet it was reached on, per JobSet key).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset.api.defaulting import defaulted_view
from jobset.api.validation import (
    DEFAULT_LIMITS,
    FieldError,
    Limits,
    format_invalid_message,
    validate_create,
    validate_update,
)

__all__ = ["StoredValidation"]


@dataclass(frozen=True)
class _Verdict:
    uid: str
    generation: int
    message: str | None
    jobset: Mapping[str, Any]


def _identity(js: Mapping[str, Any]) -> tuple[str, int]:
    meta = js.get("metadata") or {}
    return str(meta.get("uid") or ""), int(meta.get("generation") or 0)


class StoredValidation:
    """Validation errors of stored JobSets, formatted as the webhook's 422 message."""

    def __init__(self, features: dict[str, bool], limits: Limits = DEFAULT_LIMITS) -> None:
        self.features = features
        self.limits = limits
        self._verdicts: dict[str, _Verdict] = {}

    def message(self, key: str, js: Mapping[str, Any]) -> str | None:
        """None when `js` is valid, else the errors (cached per uid and generation)."""
        uid, generation = _identity(js)
        last = self._verdicts.get(key)
        if last is not None and (last.uid, last.generation) == (uid, generation):
            return last.message
        errors = self._errors(js, uid, generation, last)
        name = str((js.get("metadata") or {}).get("name"))
        message = format_invalid_message(name, errors) if errors else None
        self._verdicts[key] = _Verdict(uid, generation, message, js)
        return message

    def _errors(
        self, js: Mapping[str, Any], uid: str, generation: int, last: _Verdict | None
    ) -> list[FieldError]:
        new = defaulted_view(js)
        if generation <= 1:
            return validate_create(new, features=self.features, limits=self.limits)
        if (
            last is not None
            and last.uid == uid
            and last.generation == generation - 1
            and last.message is None
        ):
            old = defaulted_view(last.jobset)
            return validate_update(new, old, features=self.features, limits=self.limits)
        if not js.get("status"):
            return validate_create(new, features=self.features, limits=self.limits)
        return []

    def forget(self, key: str) -> None:
        self._verdicts.pop(key, None)
