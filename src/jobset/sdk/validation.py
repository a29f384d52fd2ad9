"""Client-side validation: the admission webhook's rules, run before anything is sent.

A JobSet the webhook would reject is better reported while the user still holds the
object (at `build()` or `jobset submit`), with the same field-pathed text the server would
give. The steps are the webhook's: default (`default_jobset`), then `validate_create`;
the preset annotations, which only this project reads, are checked too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset.api import default_jobset, format_invalid_message, validate_create
from jobset.api.presets import validate_presets
from jobset.api.validation.errors import ErrorType, FieldError
from jobset.api.validation.names import name_for_validation
from jobset.sdk.models import JobSet

__all__ = ["ValidationError", "check", "validate"]


class ValidationError(ValueError):
    """A JobSet the API would reject; `str()` is the API server's wording."""

    def __init__(self, name: str, errors: Sequence[FieldError]) -> None:
        super().__init__(format_invalid_message(name, errors))
        self.name = name
        self.errors = list(errors)


def _as_dict(js: JobSet | Mapping[str, Any]) -> Mapping[str, Any]:
    return js.to_dict() if isinstance(js, JobSet) else js


def validate(
    js: JobSet | Mapping[str, Any], *, features: Mapping[str, bool] | None = None
) -> list[FieldError]:
    """Every error the webhook (and the preset rules) find in `js`; empty when valid."""
    data = _as_dict(js)
    errs: list[FieldError] = []
    if not (data.get("spec") or {}).get("replicatedJobs"):
        # The CRD schema requires it; validate_create leaves schema rules to the server.
        errs.append(FieldError("spec.replicatedJobs", ErrorType.REQUIRED, "at least one is needed"))
    errs += validate_create(default_jobset(data), features=features)
    errs += validate_presets(data)
    return errs


def check(js: JobSet | Mapping[str, Any], *, features: Mapping[str, bool] | None = None) -> None:
    """Raise ValidationError when `js` is invalid."""
    errs = validate(js, features=features)
    if errs:
        raise ValidationError(name_for_validation(_as_dict(js)), errs)
