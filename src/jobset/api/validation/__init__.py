"""Admission validation of JobSets: the rules of upstream's validating webhook.

`validate_create` and `validate_update` return `FieldError`s that render, field path and
message, as Kubernetes renders `field.Error`s, because users and tools compare these texts
with what the upstream controller says. The admission webhook turns them into a 422
`Invalid` Status with `invalid_status`; the controller may call them defensively.

Everything the CRD schema already enforces (types, enums, required fields, CEL immutability
of network / successPolicy / failurePolicy / startupPolicy / volumeClaimPolicies) is left to
the schema, as upstream does. The functions expect an object that went through the API
server's schema defaulting and `default_jobset`; where a defaulted field is absent anyway
they assume the value the server would have stored (replicas 1, groupName `default`).

A few upstream rules produce errors without a field path (Go wraps plain errors as
`field.InternalError(nil, err)`, rendered `<nil>: Internal error: ...`). They are reproduced
as such, with the path the rule concerns kept in `FieldError.origin` for logs and tests.

The package, by concern (import from the package itself; the names below are its API):
`errors` (field errors, their rendering and the 422 Status), `names` (name formats and the
name-length rule texts), `limits` (the Jobs / pods caps), `create` (the rules of a create),
`volumes` (the volumeClaimPolicies rules), `update` (the rules of an update), `semantic`
(semantic equality) and `helpers` (feature gates, Indexed Jobs).
"""

from __future__ import annotations

from jobset.api.validation.create import validate_create
from jobset.api.validation.errors import (
    ErrorType,
    FieldError,
    format_invalid_message,
    invalid_status,
)
from jobset.api.validation.limits import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_JOBS_PER_JOBSET,
    DEFAULT_MAX_PODS_PER_JOB,
    UNLIMITED,
    Limits,
)
from jobset.api.validation.names import is_domain_prefixed_path, name_for_validation
from jobset.api.validation.semantic import semantic_equal
from jobset.api.validation.update import validate_update
from jobset.api.validation.volumes import volume_claim_pvc_names
from kubeutil.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
)

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_JOBS_PER_JOBSET",
    "DEFAULT_MAX_PODS_PER_JOB",
    "UNLIMITED",
    "ErrorType",
    "FieldError",
    "Limits",
    "format_invalid_message",
    "invalid_status",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_domain_prefixed_path",
    "is_valid_label_value",
    "name_for_validation",
    "semantic_equal",
    "validate_create",
    "validate_update",
    "volume_claim_pvc_names",
]
