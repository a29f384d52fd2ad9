"""Client-side validation: what the API server would refuse, found before anything is sent.

A JobSet the server would reject is better reported while the user still holds the object
(at `build()` or `jobset submit --dry-run=client`), with the same field-pathed text the
server would give. The steps are the server's: the CRD schema first (`jobset.api.schema`:
types, enums, minimums, required fields; the schema is the package's own CRD,
`jobset.data`), and only for an object that passes it, the webhook's defaulting
(`default_jobset`) and `validate_create`; the preset annotations, which only this project
reads, are checked too. `unknown_fields` is kubectl's `fieldValidation=Strict` check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jobset.api import constants as c
from jobset.api import default_jobset, format_invalid_message, validate_create
from jobset.api.presets import validate_presets
from jobset.api.schema import schema_errors
from jobset.api.schema import unknown_fields as schema_unknown_fields
from jobset.api.validation.errors import ErrorType, FieldError
from jobset.api.validation.names import name_for_validation
from jobset.sdk.models import JobSet

__all__ = ["ValidationError", "check", "jobset_schema", "unknown_fields", "validate"]


class ValidationError(ValueError):
    """A JobSet the API would reject; `str()` is the API server's wording, `.errors` every
    field error (`FieldError`: `.path`, `.type`, `.message`, `.value`)."""

    def __init__(self, name: str, errors: Sequence[FieldError]) -> None:
        super().__init__(format_invalid_message(name, errors))
        self.name = name
        self.errors = list(errors)


@cache
def jobset_schema() -> Mapping[str, Any]:
    """The `openAPIV3Schema` of the served version of the package's JobSet CRD."""
    import yaml

    from jobset.data import CRD_DIR

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((CRD_DIR / f"{c.GROUP}_{c.PLURAL}.yaml").read_text(), Loader=loader)
    if not isinstance(crd, Mapping):  # pragma: no cover - the package's own file
        raise RuntimeError("the packaged JobSet CRD is not a YAML mapping")
    for version in crd["spec"]["versions"]:
        if version.get("name") == c.VERSION:
            return dict(version["schema"]["openAPIV3Schema"])
    raise RuntimeError(f"the packaged JobSet CRD has no version {c.VERSION}")  # pragma: no cover


def _as_dict(js: JobSet | Mapping[str, Any]) -> Mapping[str, Any]:
    return js.to_dict() if isinstance(js, JobSet) else js


def validate(
    js: JobSet | Mapping[str, Any], *, features: Mapping[str, bool] | None = None
) -> list[FieldError]:
    """Every error the API server (the CRD schema, then the webhook) and the preset rules
    find in `js`; empty when valid. In the API server's order: the mutating webhook's
    defaulting, then the schema, and the validating webhook's rules only for an object the
    schema admits (the server stops there too). A wrong type or value is reported before
    defaulting, which expects the schema's types."""
    data = _as_dict(js)
    errs = schema_errors(data, jobset_schema())
    if errs and not any(e.type is ErrorType.REQUIRED for e in errs):
        return errs  # the webhook's defaulting cannot mend a wrong type or value
    defaulted = default_jobset(data)
    errs = schema_errors(defaulted, jobset_schema())
    if errs:
        return errs
    if not (data.get("spec") or {}).get("replicatedJobs"):
        # The CRD schema requires it; validate_create leaves schema rules to the server.
        errs.append(FieldError("spec.replicatedJobs", ErrorType.REQUIRED, "at least one is needed"))
    errs += validate_create(defaulted, features=features)
    errs += validate_presets(data)
    return errs


def unknown_fields(js: JobSet | Mapping[str, Any]) -> list[str]:
    """The fields of `js` the CRD schema does not declare (`fieldValidation=Strict`)."""
    return schema_unknown_fields(_as_dict(js), jobset_schema())


def check(js: JobSet | Mapping[str, Any], *, features: Mapping[str, bool] | None = None) -> None:
    """Raise ValidationError, listing every field error, when `js` is invalid."""
    errs = validate(js, features=features)
    if errs:
        raise ValidationError(name_for_validation(_as_dict(js)), errs)
