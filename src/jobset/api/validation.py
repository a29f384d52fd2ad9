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
"""

from __future__ import annotations

import copy
import enum
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobset.api import constants as c
from jobset.api import types as t
from kubeutil.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    regex_error,
)
from kubeutil.quantity import parse_quantity

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


# ------------------------------------------------------------------------------------------------
# Field errors


class ErrorType(enum.StrEnum):
    """Machine-readable error kinds: the `reason` of a Status cause."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"

    @property
    def label(self) -> str:
        """The human text Kubernetes prints for this kind."""
        return _TYPE_LABELS[self]


_TYPE_LABELS: Final[dict[ErrorType, str]] = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}
# Kinds whose rendering never shows the offending value.
_VALUELESS: Final = frozenset(
    {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}
)


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Final = _NoValue()


def go_quote(s: str) -> str:
    """A string quoted as Go's %q does for the texts that occur here."""
    return json.dumps(s, ensure_ascii=False)


# A string value longer than this is cut in messages (a 256 KiB annotation must not be
# echoed back whole, once per error).
MAX_VALUE_CHARS: Final = 256


def render_value(value: Any) -> str | None:
    """The offending value as Kubernetes prints it: numbers and booleans bare, strings
    quoted (cut after `MAX_VALUE_CHARS`), null for an absent value, and None - omitted -
    for objects and lists, as apimachinery omits values of complex types: an error about
    `spec.replicatedJobs` must not repeat the whole list (50 of them made a 21 MiB answer)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            return go_quote(value[:MAX_VALUE_CHARS]) + f"... ({len(value)} characters)"
        return go_quote(value)
    if value is None:
        return "null"
    return None


@dataclass(frozen=True)
class FieldError:
    """One validation failure: where (`path`), what kind (`type`), and why (`message`).

    `path` None is Go's nil field path, printed `<nil>`. `value` is the offending value
    (`NO_VALUE` to omit it). `origin` names the field a path-less error is about; it is
    informational and never rendered.
    """

    path: str | None
    type: ErrorType
    message: str = ""
    value: Any = NO_VALUE
    origin: str | None = None

    @property
    def field(self) -> str:
        """The field as it appears in a Status cause."""
        return "<nil>" if self.path is None else self.path

    def body(self) -> str:
        """The error without its field: `Invalid value: "x": detail`."""
        shown = (
            None if self.type in _VALUELESS or self.value is NO_VALUE else render_value(self.value)
        )
        text = self.type.label if shown is None else f"{self.type.label}: {shown}"
        if self.message:
            text += f": {self.message}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def to_cause(self) -> dict[str, str]:
        """This error as an entry of `Status.details.causes`."""
        return {"reason": str(self.type), "message": self.body(), "field": self.field}


def invalid(path: str, value: Any, message: str) -> FieldError:
    """field.Invalid."""
    return FieldError(path, ErrorType.INVALID, message, value)


def forbidden(path: str, message: str) -> FieldError:
    """field.Forbidden."""
    return FieldError(path, ErrorType.FORBIDDEN, message, "")


def required(path: str, message: str = "") -> FieldError:
    """field.Required."""
    return FieldError(path, ErrorType.REQUIRED, message, "")


def too_long(path: str, max_length: int) -> FieldError:
    """field.TooLong (the value is never shown)."""
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError(path, ErrorType.TOO_LONG, f"may not be more than {max_length} {unit}")


def internal(message: str, origin: str | None = None, path: str | None = None) -> FieldError:
    """A plain error, as upstream reports its path-less rule violations."""
    return FieldError(path, ErrorType.INTERNAL, message, NO_VALUE, origin)


def format_invalid_message(name: str, errors: Sequence[FieldError]) -> str:
    """`JobSet.jobset.x-k8s.io "<name>" is invalid: ...`, as apierrors.NewInvalid words it.

    Several errors are bracketed and comma-separated; repeated texts are shown once.
    """
    head = f"{c.KIND}.{c.GROUP} {go_quote(name)} is invalid"
    texts = list(dict.fromkeys(str(err) for err in errors))  # linear, keeps the order
    if not texts:
        return head
    if len(texts) == 1:
        return f"{head}: {texts[0]}"
    shown = texts[:MAX_REPORTED_ERRORS]
    more = len(texts) - len(shown)
    if more:
        shown.append(f"and {more} more errors")
    return f"{head}: [{', '.join(shown)}]"


# Errors shown in one answer; beyond it the message says how many more (the causes stop
# there too), so the size of a denial is bounded whatever a JobSet holds.
MAX_REPORTED_ERRORS: Final = 50


def invalid_status(name: str, errors: Sequence[FieldError]) -> dict[str, Any]:
    """The 422 `Status` object an admission webhook returns for these errors."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format_invalid_message(name, errors),
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": c.GROUP,
            "kind": c.KIND,
            "causes": [err.to_cause() for err in errors[:MAX_REPORTED_ERRORS]],
        },
        "code": 422,
    }


# ------------------------------------------------------------------------------------------------
# Kubernetes name formats: the checks are `kubeutil.names` (shared with the simulated cluster)

_HTTP_PATH_FMT: Final = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE: Final = re.compile(_HTTP_PATH_FMT)


def is_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """Errors unless `value` looks like `acme.io/foo` (RFC 1123 host, RFC 3986 path)."""
    if not value:
        return [required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.fullmatch(rest):
        errs.append(invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


# ------------------------------------------------------------------------------------------------
# Helpers

_DNS1035_TOO_LONG: Final = "must be no more than 63 characters"
GROUP_NAME_TOO_LONG_MSG: Final = (
    ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
)
JOB_NAME_TOO_LONG_MSG: Final = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG_MSG: Final = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)
SUBDOMAIN_TOO_LONG_MSG: Final = (
    ".spec.network.subdomain is too long, must be less than 63 characters"
)
_RULE_NAME_RE: Final = re.compile("[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_MIN_RULE_NAME: Final = 1
_MAX_RULE_NAME: Final = 128
# The API server's generateName: at most 58 characters of prefix, then 5 random characters.
_GENERATED_PREFIX_MAX: Final = 58
# Stands for the random part: any 5 characters of the generator's alphabet (lower-case
# consonants and digits) give the same verdict for every check below.
_GENERATED_SUFFIX: Final = "xxxxx"
# Suffix the API server adds to the pod names of a Job, counted in the pod-name check.
_POD_SUFFIX: Final = "-abcde"


def name_for_validation(js: Mapping[str, Any]) -> str:
    """The name the JobSet will have: metadata.name, or what generateName will produce.

    Only the length and character classes of the random part matter to validation, so a
    fixed stand-in keeps validation deterministic.
    """
    meta = js.get("metadata") or {}
    if meta.get("name"):
        return str(meta["name"])
    base = str(meta.get("generateName") or "")
    if base:
        return base[:_GENERATED_PREFIX_MAX] + _GENERATED_SUFFIX
    return ""


def _gate(features: Mapping[str, bool] | None, name: str) -> bool:
    if features is not None and name in features:
        return bool(features[name])
    return c.DEFAULT_FEATURE_GATES.get(name, False)


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


def _int32_product_overflows(a: int, b: int) -> bool:
    return a * b > c.MAX_INT32


def _path_set(root: dict[str, Any], keys: Sequence[str], value: Any) -> None:
    """Set root[k0][k1]...=value, creating dicts; a None value removes the leaf."""
    node = root
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            if value is None:
                return
            child = {}
            node[key] = child
        node = child
    if value is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = copy.deepcopy(value)


def _path_get(root: Mapping[str, Any] | None, keys: Sequence[str]) -> Any:
    node: Any = root
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _is_indexed(job_spec: Mapping[str, Any]) -> bool:
    return job_spec.get("completionMode") == c.JOB_COMPLETION_MODE_INDEXED


# ------------------------------------------------------------------------------------------------
# Size limits (not upstream's: upstream admits any int32 replicas)

# Jobs one JobSet may ask for (the sum of its replicatedJobs' replicas). Every pass of the
# controller over a JobSet costs in proportion to its Jobs, and a tenant chooses that number;
# 100,000 admits the project's largest benchmark (`make bench-large`: 64,000 Jobs in one
# JobSet) with room to spare. Operators raise or lower it with `--max-jobs-per-jobset`.
DEFAULT_MAX_JOBS_PER_JOBSET: Final = 100_000
# Pods one Job may ask for (its parallelism and its completions): Kubernetes' own cap on an
# Indexed Job's parallelism (100,000). `--max-pods-per-job`.
DEFAULT_MAX_PODS_PER_JOB: Final = 100_000

MAX_JOBS_FLAG: Final = "--max-jobs-per-jobset"
MAX_PODS_FLAG: Final = "--max-pods-per-job"


@dataclass(frozen=True)
class Limits:
    """What one JobSet may ask for; None: no limit (upstream's behaviour).

    The controller passes the values of its flags; the webhook (admission) and the
    controller's check of stored JobSets (which may have bypassed the webhook) apply the same.
    """

    max_jobs_per_jobset: int | None = DEFAULT_MAX_JOBS_PER_JOBSET
    max_pods_per_job: int | None = DEFAULT_MAX_PODS_PER_JOB


DEFAULT_LIMITS: Final = Limits()
UNLIMITED: Final = Limits(None, None)


def _validate_limits(rjobs: Sequence[Mapping[str, Any]], limits: Limits) -> list[FieldError]:
    errs: list[FieldError] = []
    max_jobs, max_pods = limits.max_jobs_per_jobset, limits.max_pods_per_job
    total = 0
    single = False  # one ReplicatedJob alone is over the limit: that error says it all
    for idx, rjob in enumerate(rjobs):
        path = f"spec.replicatedJobs[{idx}]"
        reps = t.replicas(rjob)
        total += max(0, reps)
        if max_jobs is not None and reps > max_jobs:
            single = True
            errs.append(
                invalid(
                    f"{path}.replicas",
                    reps,
                    f"must be no more than {max_jobs}: a JobSet may have at most {max_jobs} "
                    f"Jobs (the sum of replicas over spec.replicatedJobs; the controller's "
                    f"{MAX_JOBS_FLAG} flag sets this limit)",
                )
            )
        if max_pods is None:
            continue
        job_spec = t.job_spec(rjob)
        for key in ("parallelism", "completions"):
            value = job_spec.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > max_pods:
                errs.append(
                    invalid(
                        f"{path}.template.spec.{key}",
                        value,
                        f"must be no more than {max_pods}: a Job of a JobSet may have at most "
                        f"{max_pods} pods (the controller's {MAX_PODS_FLAG} flag sets this "
                        "limit)",
                    )
                )
    if max_jobs is not None and total > max_jobs and not single:
        errs.append(
            FieldError(
                "spec.replicatedJobs",
                ErrorType.TOO_MANY,
                f"must have at most {max_jobs} Jobs in total (the sum of replicas over "
                f"spec.replicatedJobs; the controller's {MAX_JOBS_FLAG} flag sets this limit)",
                total,
            )
        )
    return errs


# ------------------------------------------------------------------------------------------------
# Create


def validate_create(
    js: Mapping[str, Any],
    *,
    features: Mapping[str, bool] | None = None,
    existing_pvcs: Mapping[str, Mapping[str, Any] | Exception] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[FieldError]:
    """Every rule upstream's webhook checks when a JobSet is created (or, defensively, read).

    `features` overrides the default feature gates (InPlaceRestart, RestartJob are alpha and
    off by default). `existing_pvcs` maps the names of PVCs the volumeClaimPolicies would
    create (see `volume_claim_pvc_names`) to the PVC found in the JobSet's namespace, or to
    the exception the lookup raised; absent names do not exist. The webhook fetches them
    before calling, so this function stays free of I/O. `limits` caps the Jobs of the JobSet
    and the pods of each Job (not an upstream rule; `UNLIMITED` checks upstream's alone).
    """
    errs: list[FieldError] = []
    spec: Mapping[str, Any] = js.get("spec") or {}
    jsname = name_for_validation(js)
    rjobs: list[Mapping[str, Any]] = list(spec.get("replicatedJobs") or [])
    errs.extend(_validate_limits(rjobs, limits))
    failure_policy: Mapping[str, Any] | None = spec.get("failurePolicy")
    in_place = (
        failure_policy is not None
        and failure_policy.get("restartStrategy") == c.RESTART_STRATEGY_IN_PLACE_RESTART
    )

    if in_place and not _gate(features, c.FEATURE_IN_PLACE_RESTART):
        errs.append(
            internal(
                "InPlaceRestart restart strategy cannot be set when InPlaceRestart "
                "feature gate is disabled",
                "spec.failurePolicy.restartStrategy",
            )
        )

    if rjobs and rjobs[0].get("dependsOn") is not None:
        errs.append(
            internal(
                "DependsOn can't be set for the first ReplicatedJob",
                "spec.replicatedJobs[0].dependsOn",
            )
        )

    network = spec.get("network") or {}
    sub = network.get("subdomain") or ""
    if sub:
        path = "spec.network.subdomain"
        errs.extend(invalid(path, sub, msg) for msg in is_dns1123_subdomain(sub))
        # The subdomain is also the headless Service's name, hence RFC 1035 too.
        for msg in is_dns1035_label(sub):
            errs.append(
                invalid(path, sub, SUBDOMAIN_TOO_LONG_MSG if _DNS1035_TOO_LONG in msg else msg)
            )

    manager = spec.get("managedBy")
    if manager is not None:
        path = "spec.managedBy"
        errs.extend(is_domain_prefixed_path(path, str(manager)))
        if len(str(manager)) > c.MAX_MANAGED_BY_LENGTH:
            errs.append(too_long(path, c.MAX_MANAGED_BY_LENGTH))

    names: set[str] = set()
    for idx, rjob in enumerate(rjobs):
        errs.extend(_validate_replicated_job(idx, rjob, jsname, names, in_place, features))

    success_policy = spec.get("successPolicy") or {}
    for target in success_policy.get("targetReplicatedJobs") or []:
        if target not in names:
            errs.append(
                internal(
                    f"invalid replicatedJob name '{target}' does not appear in "
                    ".spec.ReplicatedJobs",
                    "spec.successPolicy.targetReplicatedJobs",
                )
            )

    if failure_policy is not None:
        errs.extend(_validate_failure_policy(failure_policy, rjobs, names, features))

    coordinator = spec.get("coordinator")
    if coordinator is not None:
        coord_err = _validate_coordinator(coordinator, rjobs)
        if coord_err is not None:
            errs.append(coord_err)
        errs.extend(_validate_coordinator_label(js, jsname))

    policies = spec.get("volumeClaimPolicies") or []
    if policies:
        errs.extend(
            _validate_volume_claim_policies(js, jsname, policies, rjobs, existing_pvcs or {})
        )
    return errs


def _validate_replicated_job(
    idx: int,
    rjob: Mapping[str, Any],
    jsname: str,
    names: set[str],
    in_place: bool,
    features: Mapping[str, bool] | None,
) -> list[FieldError]:
    errs: list[FieldError] = []
    path = f"spec.replicatedJobs[{idx}]"
    name = str(rjob.get("name") or "")
    names.add(name)
    reps = t.replicas(rjob)
    job_spec = t.job_spec(rjob)

    parallelism = job_spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    if _int32_product_overflows(parallelism, reps):
        errs.append(
            internal(
                f"the product of replicas and parallelism must not exceed {c.MAX_INT32} "
                f"for replicatedJob '{name}'",
                path,
            )
        )

    group = t.group_name(rjob)
    for msg in is_dns1035_label(group):
        errs.append(
            invalid(
                f"{path}.groupName",
                group,
                GROUP_NAME_TOO_LONG_MSG if _DNS1035_TOO_LONG in msg else msg,
            )
        )

    # The highest job index gives the longest Job name.
    longest_job = t.job_name(jsname, name, reps - 1)
    for msg in is_dns1035_label(longest_job):
        errs.append(
            invalid(
                f"{path}.name",
                longest_job,
                JOB_NAME_TOO_LONG_MSG if _DNS1035_TOO_LONG in msg else msg,
            )
        )

    completions = job_spec.get("completions")
    if _is_indexed(job_spec) and completions is not None:
        longest_pod = t.pod_hostname(jsname, name, reps - 1, int(completions) - 1) + _POD_SUFFIX
        for msg in is_dns1035_label(longest_pod):
            errs.append(
                invalid(
                    f"{path}.name",
                    longest_job,  # upstream reports the Job name here too
                    POD_NAME_TOO_LONG_MSG if _DNS1035_TOO_LONG in msg else msg,
                )
            )

    # A ReplicatedJob may depend only on ReplicatedJobs listed before it. Upstream's check
    # lets one name itself (it is in `names` by now) and then never creates it; refused here
    # instead, since such a JobSet can never run (docs/upstream-differences.md).
    for didx, dep in enumerate(rjob.get("dependsOn") or []):
        dep_name = str(dep.get("name") or "")
        if dep_name == name:
            errs.append(
                invalid(
                    f"{path}.dependsOn[{didx}].name",
                    dep_name,
                    "a ReplicatedJob cannot depend on itself: it would never start",
                )
            )
        elif dep_name not in names:
            errs.append(
                internal(
                    f"replicatedJob: {name} cannot depend on replicatedJob: {dep_name}",
                    f"{path}.dependsOn",
                )
            )

    if in_place and _gate(features, c.FEATURE_IN_PLACE_RESTART):
        tpath = f"{path}.template.spec"
        backoff = job_spec.get("backoffLimit")
        if backoff is None or int(backoff) != c.MAX_INT32:
            errs.append(
                invalid(
                    f"{tpath}.backoffLimit",
                    backoff,
                    f"replicatedJob {name}: must be set to {c.MAX_INT32} (MaxInt32) when "
                    "in-place restart is enabled",
                )
            )
        replacement = job_spec.get("podReplacementPolicy")
        if replacement != c.POD_REPLACEMENT_POLICY_FAILED:
            errs.append(
                invalid(
                    f"{tpath}.podReplacementPolicy",
                    replacement,
                    f"replicatedJob {name}: must be set to {c.POD_REPLACEMENT_POLICY_FAILED} "
                    "when in-place restart is enabled",
                )
            )
        par = job_spec.get("parallelism")
        if completions is None or par is None or int(completions) != int(par):
            errs.append(
                invalid(
                    f"{tpath}.completions",
                    completions,
                    f"replicatedJob {name}: completions and parallelism must be set and "
                    "equal to each other when in-place restart is enabled",
                )
            )
    return errs


def _validate_failure_policy(
    policy: Mapping[str, Any],
    rjobs: Sequence[Mapping[str, Any]],
    names: set[str],
    features: Mapping[str, bool] | None,
) -> list[FieldError]:
    errs: list[FieldError] = []
    rules: list[Mapping[str, Any]] = list(policy.get("rules") or [])
    origin = "spec.failurePolicy.rules"

    if any(r.get("action") in c.JOB_RESTART_ACTIONS for r in rules):
        if not _gate(features, c.FEATURE_RESTART_JOB):
            # Upstream stops checking the failure policy here.
            return [
                internal(
                    "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are "
                    "not allowed when RestartJob feature gate is disabled",
                    origin,
                )
            ]
        if any(t.replicas(r) > c.MAX_REPLICAS_FOR_RESTART_JOB for r in rjobs):
            errs.append(
                internal(
                    "JobSet cannot have a failure policy rule with RestartJob or "
                    "RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas "
                    f"> {c.MAX_REPLICAS_FOR_RESTART_JOB}",
                    origin,
                )
            )

    indexes_by_name: dict[str, list[int]] = {}
    for index, rule in enumerate(rules):
        rule_name = str(rule.get("name") or "")
        rpath = f"{origin}[{index}]"
        if not _MIN_RULE_NAME <= len(rule_name) <= _MAX_RULE_NAME:
            errs.append(
                internal(
                    f"invalid failure policy rule name of length {len(rule_name)}, the rule "
                    f"name must be at least {_MIN_RULE_NAME} characters long and at most "
                    f"{_MAX_RULE_NAME} characters long",
                    f"{rpath}.name",
                )
            )
        indexes_by_name.setdefault(rule_name, []).append(index)
        if not _RULE_NAME_RE.fullmatch(rule_name):
            errs.append(
                internal(
                    f"invalid failure policy rule name '{rule_name}', a failure policy rule "
                    "name must start with an alphabetic character, optionally followed by a "
                    "string of alphanumeric characters or '_,:', and must end with an "
                    "alphanumeric character or '_'",
                    f"{rpath}.name",
                )
            )
        for target in rule.get("targetReplicatedJobs") or []:
            if target not in names:
                errs.append(
                    internal(
                        f"invalid replicatedJob name '{target}' in failure policy does not "
                        "appear in .spec.ReplicatedJobs",
                        f"{rpath}.targetReplicatedJobs",
                    )
                )
        for reason in rule.get("onJobFailureReasons") or []:
            if reason not in c.JOB_FAILURE_REASONS:
                errs.append(
                    internal(
                        f"invalid job failure reason '{reason}' in failure policy is not a "
                        "recognized job failure reason",
                        f"{rpath}.onJobFailureReasons",
                    )
                )

    # Upstream walks a Go map here (random order); first-occurrence order is deterministic.
    for rule_name, indexes in indexes_by_name.items():
        if len(indexes) > 1:
            shown = "[" + " ".join(str(i) for i in indexes) + "]"
            errs.append(
                internal(
                    f"rule names are not unique, rules with indices {shown} all have the "
                    f"same name '{rule_name}'",
                    origin,
                )
            )
    return errs


def _validate_coordinator(
    coordinator: Mapping[str, Any], rjobs: Sequence[Mapping[str, Any]]
) -> FieldError | None:
    """The first problem of spec.coordinator, as upstream reports only one."""
    origin = "spec.coordinator"
    rjob_name = str(coordinator.get("replicatedJob") or "")
    rjob = next((r for r in rjobs if r.get("name") == rjob_name), None)
    if rjob is None:
        return internal(f"coordinator replicatedJob {rjob_name} does not exist", origin)
    job_index = int(coordinator.get("jobIndex") or 0)
    if job_index < 0 or job_index >= t.replicas(rjob):
        return internal(
            f"coordinator job index {job_index} is invalid for replicatedJob {rjob_name}",
            origin,
        )
    job_spec = t.job_spec(rjob)
    completions = job_spec.get("completions")
    if not _is_indexed(job_spec) or completions is None:
        return internal(
            "job for coordinator pod must be indexed completion mode, and completions "
            "number must be set",
            origin,
        )
    pod_index = int(coordinator.get("podIndex") or 0)
    if pod_index < 0 or pod_index >= int(completions):
        return internal(
            f"coordinator pod index {pod_index} is invalid for replicatedJob {rjob_name} "
            f"job index {job_index}",
            origin,
        )
    return None


def _validate_coordinator_label(js: Mapping[str, Any], jsname: str) -> list[FieldError]:
    """The coordinator endpoint becomes a label value: it must be one."""
    named = dict(js)
    named["metadata"] = {**(js.get("metadata") or {}), "name": jsname}
    value = t.coordinator_endpoint(named)
    problems = is_valid_label_value(value)
    if not problems:
        return []
    return [
        internal(
            f"spec will lead to invalid label value {go_quote(value)} for coordinator label "
            f"{go_quote(c.COORDINATOR_KEY)} (long JobSet / ReplicatedJob / SubDomain name?): "
            + ", ".join(problems),
            "spec.coordinator",
        )
    ]


def volume_claim_pvc_names(js: Mapping[str, Any]) -> list[str]:
    """Names of the PVCs the JobSet's volumeClaimPolicies would create.

    The webhook looks these up in the JobSet's namespace and passes the result to
    `validate_create(existing_pvcs=...)`.
    """
    jsname = name_for_validation(js)
    out = []
    for policy in (js.get("spec") or {}).get("volumeClaimPolicies") or []:
        for template in policy.get("templates") or []:
            claim = str((template.get("metadata") or {}).get("name") or "")
            out.append(t.pvc_name(jsname, claim))
    return out


def _validate_volume_claim_policies(
    js: Mapping[str, Any],
    jsname: str,
    policies: Iterable[Mapping[str, Any]],
    rjobs: Sequence[Mapping[str, Any]],
    existing: Mapping[str, Mapping[str, Any] | Exception],
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    namespace = t.namespace_of(js)
    for pidx, policy in enumerate(policies):
        ppath = f"spec.volumeClaimPolicies[{pidx}]"
        for tidx, template in enumerate(policy.get("templates") or []):
            # Upstream names this path `template` (singular); kept for identical messages.
            tpath = f"{ppath}.template[{tidx}]"
            claim = str((template.get("metadata") or {}).get("name") or "")
            if claim in seen:
                errs.append(
                    invalid(
                        f"{tpath}.name",
                        claim,
                        "names must be unique for VolumeClaimPolicies template",
                    )
                )
            errs.extend(invalid(f"{tpath}.name", claim, m) for m in is_dns1123_subdomain(claim))
            pvc = t.pvc_name(jsname, claim)
            if len(pvc) > c.MAX_VOLUME_CLAIM_NAME_LENGTH:
                errs.append(
                    invalid(f"{tpath}.name", claim, "VolumeClaimPolicies template name is too long")
                )
            errs.extend(_validate_claim_mounts(rjobs, claim))

            found = existing.get(pvc)
            if isinstance(found, Exception):
                errs.append(
                    FieldError(
                        tpath,
                        ErrorType.INTERNAL,
                        f"failed to check for existing PVC {pvc}: {found}",
                    )
                )
            elif found is not None:
                if not semantic_equal(found.get("spec"), template.get("spec")):
                    errs.append(
                        invalid(
                            f"{tpath}.spec",
                            template.get("spec") or {},
                            f"spec does not match existing PVC {pvc} in namespace {namespace}",
                        )
                    )
                retention = policy.get("retentionPolicy")
                if retention is not None:
                    when = retention.get("whenDeleted")
                    if when != c.RETENTION_RETAIN:
                        errs.append(
                            invalid(
                                f"{ppath}.retentionPolicy.whenDeleted",
                                when,
                                "retentionPolicy must be retain when PVC exists",
                            )
                        )
            seen.add(claim)
    return errs


def _validate_claim_mounts(rjobs: Sequence[Mapping[str, Any]], claim: str) -> list[FieldError]:
    """A claim must be mounted by some container and must not clash with a template volume."""
    errs: list[FieldError] = []
    mounted = False
    for ridx, rjob in enumerate(rjobs):
        pod_spec = t.pod_spec(rjob)
        for vidx, volume in enumerate(pod_spec.get("volumes") or []):
            if volume.get("name") == claim:
                errs.append(
                    invalid(
                        f"spec.replicatedJobs[{ridx}].template.spec.template.spec.volumes[{vidx}].name",
                        claim,
                        f"volume name conflicts with VolumeClaimPolicy template name: {claim}",
                    )
                )
        if not mounted:
            for key in ("initContainers", "containers"):
                for container in pod_spec.get(key) or []:
                    if any(m.get("name") == claim for m in container.get("volumeMounts") or []):
                        mounted = True
    if not mounted:
        errs.append(
            invalid(
                "spec.replicatedJobs",
                list(rjobs),
                f"replicatedJob containers don't have a matching volumeMount: {claim} from "
                "VolumeClaimPolicies",
            )
        )
    return errs


# ------------------------------------------------------------------------------------------------
# Update

# Pod-template fields Kueue may change while a JobSet is (or is becoming) suspended:
# metadata labels/annotations, and the scheduling-related pod spec fields.
_KUEUE_MUTABLE: Final[tuple[tuple[str, ...], ...]] = (
    ("template", "spec", "template", "metadata", "annotations"),
    ("template", "spec", "template", "metadata", "labels"),
    ("template", "spec", "template", "spec", "nodeSelector"),
    ("template", "spec", "template", "spec", "tolerations"),
    ("template", "spec", "template", "spec", "schedulingGates"),
)
ELASTIC_TERMINAL_MSG: Final = (
    "Cannot mutate parallelism or completions when JobSet is in a terminal state "
    "(Completed or Failed)"
)


def validate_update(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    *,
    features: Mapping[str, bool] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[FieldError]:
    """Rules for an update: replicatedJobs and managedBy are immutable, with two exceptions.

    - While the old or the new JobSet is suspended, each pod template's labels, annotations,
      nodeSelector, tolerations and schedulingGates may change (how Kueue injects its
      placement decisions before admitting a workload).
    - With the ElasticJobSet gate, parallelism and completions of Indexed Jobs may change
      (equal to each other, at least 1) unless the JobSet already finished.

    network, successPolicy, failurePolicy, startupPolicy and volumeClaimPolicies are
    immutable through the CRD's CEL rules, not here. `limits.max_pods_per_job` applies to a
    changed parallelism or completions as on create.
    """
    errs: list[FieldError] = []
    new_spec: Mapping[str, Any] = new.get("spec") or {}
    old_spec: Mapping[str, Any] = old.get("spec") or {}
    new_rjobs: list[Mapping[str, Any]] = list(new_spec.get("replicatedJobs") or [])
    old_rjobs: list[Mapping[str, Any]] = list(old_spec.get("replicatedJobs") or [])
    munged: list[dict[str, Any]] = copy.deepcopy([dict(r) for r in new_rjobs])
    old_by_name = {str(r.get("name") or ""): r for r in old_rjobs}

    if _gate(features, c.FEATURE_ELASTIC_JOBSET):
        terminal = t.is_finished(old)
        for idx, new_rjob in enumerate(new_rjobs):
            old_rjob = old_by_name.get(str(new_rjob.get("name") or ""))
            if old_rjob is None:
                continue
            new_job, old_job = t.job_spec(new_rjob), t.job_spec(old_rjob)
            if not _is_indexed(new_job):
                continue
            errs.extend(_validate_elastic(idx, new_job, old_job, terminal, limits))
            for key in ("parallelism", "completions"):
                _path_set(munged[idx], ("template", "spec", key), old_job.get(key))

    if t.is_suspended(old) or t.is_suspended(new):
        for idx, new_rjob in enumerate(new_rjobs):
            old_rjob = old_by_name.get(str(new_rjob.get("name") or ""))
            if old_rjob is None:
                continue
            for keys in _KUEUE_MUTABLE:
                _path_set(munged[idx], keys, _path_get(old_rjob, keys))

    if not semantic_equal(munged, old_rjobs):
        errs.append(invalid("spec.replicatedJobs", munged, "field is immutable"))
    if not semantic_equal(new_spec.get("managedBy"), old_spec.get("managedBy")):
        errs.append(invalid("spec.managedBy", new_spec.get("managedBy"), "field is immutable"))
    return errs


def _validate_elastic(
    idx: int,
    new_job: Mapping[str, Any],
    old_job: Mapping[str, Any],
    terminal: bool,
    limits: Limits = DEFAULT_LIMITS,
) -> list[FieldError]:
    path = f"spec.replicatedJobs[{idx}].template.spec"
    par, comp = new_job.get("parallelism"), new_job.get("completions")
    par_changed = par != old_job.get("parallelism")
    comp_changed = comp != old_job.get("completions")
    if not (par_changed or comp_changed):
        return []
    if terminal:
        return [forbidden(path, ELASTIC_TERMINAL_MSG)]
    errs = []
    if par_changed and par is not None and int(par) < 1:
        errs.append(invalid(f"{path}.parallelism", par, "parallelism must be >= 1"))
    if comp_changed and comp is not None and int(comp) < 1:
        errs.append(invalid(f"{path}.completions", comp, "completions must be >= 1"))
    if par is not None and comp is not None and int(par) != int(comp):
        errs.append(
            invalid(
                f"{path}.completions",
                comp,
                "completions must be equal to parallelism for Elastic Indexed Jobs",
            )
        )
    max_pods = limits.max_pods_per_job
    for key, value, changed in (
        ("parallelism", par, par_changed),
        ("completions", comp, comp_changed),
    ):
        if changed and max_pods is not None and value is not None and int(value) > max_pods:
            errs.append(
                invalid(
                    f"{path}.{key}",
                    value,
                    f"must be no more than {max_pods}: a Job of a JobSet may have at most "
                    f"{max_pods} pods (the controller's {MAX_PODS_FLAG} flag sets this limit)",
                )
            )
    return errs
