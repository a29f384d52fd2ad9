"""The rules of a create (and of the controller's check of a stored JobSet)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset.api import constants as c
from jobset.api import types as t
from jobset.api.validation.errors import FieldError, go_quote, internal, invalid, too_long
from jobset.api.validation.helpers import gate, is_indexed
from jobset.api.validation.limits import DEFAULT_LIMITS, Limits, validate_limits
from jobset.api.validation.names import (
    DNS1035_TOO_LONG,
    GROUP_NAME_TOO_LONG_MSG,
    JOB_NAME_TOO_LONG_MSG,
    MAX_RULE_NAME,
    MIN_RULE_NAME,
    POD_NAME_TOO_LONG_MSG,
    POD_SUFFIX,
    RULE_NAME_RE,
    SUBDOMAIN_TOO_LONG_MSG,
    is_domain_prefixed_path,
    name_for_validation,
)
from jobset.api.validation.volumes import validate_volume_claim_policies
from kubeutil.names import is_dns1035_label, is_dns1123_subdomain, is_valid_label_value

__all__ = ["validate_create", "validate_shape"]


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
    errs.extend(validate_limits(rjobs, limits))
    failure_policy: Mapping[str, Any] | None = spec.get("failurePolicy")
    in_place = (
        failure_policy is not None
        and failure_policy.get("restartStrategy") == c.RESTART_STRATEGY_IN_PLACE_RESTART
    )
    errs.extend(_validate_spec_fields(spec, rjobs, in_place, features))

    names: set[str] = set()
    for idx, rjob in enumerate(rjobs):
        errs.extend(_validate_replicated_job(idx, rjob, jsname, names, in_place, features))

    errs.extend(_validate_success_policy(spec.get("successPolicy") or {}, names))

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
            validate_volume_claim_policies(js, jsname, policies, rjobs, existing_pvcs or {})
        )
    return errs


def validate_shape(
    js: Mapping[str, Any],
    *,
    features: Mapping[str, bool] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[FieldError]:
    """The create rules that depend on how many Jobs and pods the JobSet has: the Jobs / pods
    caps, replicas x parallelism within int32, the longest generated Job and pod names, the
    RestartJob replicas ceiling and the coordinator's Job and pod index.

    An elastic update (ElasticJobSet, ElasticReplicas) changes that shape on a JobSet that
    already passed every other rule, so `validate_update` checks these again on the new
    object: an update the webhook accepts never makes a stored JobSet invalid.
    """
    errs: list[FieldError] = []
    spec: Mapping[str, Any] = js.get("spec") or {}
    jsname = name_for_validation(js)
    rjobs: list[Mapping[str, Any]] = list(spec.get("replicatedJobs") or [])
    errs.extend(validate_limits(rjobs, limits))
    for idx, rjob in enumerate(rjobs):
        errs.extend(_validate_replicated_job_size(idx, rjob, jsname))
    rules = (spec.get("failurePolicy") or {}).get("rules") or []
    if (
        gate(features, c.FEATURE_RESTART_JOB)
        and any(r.get("action") in c.JOB_RESTART_ACTIONS for r in rules)
        and any(t.replicas(r) > c.MAX_REPLICAS_FOR_RESTART_JOB for r in rjobs)
    ):
        errs.append(
            internal(
                "JobSet cannot have a failure policy rule with RestartJob or "
                "RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas "
                f"> {c.MAX_REPLICAS_FOR_RESTART_JOB}",
                "spec.failurePolicy.rules",
            )
        )
    coordinator = spec.get("coordinator")
    if coordinator is not None:
        coord_err = _validate_coordinator(coordinator, rjobs)
        if coord_err is not None:
            errs.append(coord_err)
    return errs


def _validate_spec_fields(
    spec: Mapping[str, Any],
    rjobs: Sequence[Mapping[str, Any]],
    in_place: bool,
    features: Mapping[str, bool] | None,
) -> list[FieldError]:
    """The spec-level rules checked before the ReplicatedJobs: the InPlaceRestart gate, the
    first ReplicatedJob's dependsOn, the network subdomain and managedBy."""
    errs: list[FieldError] = []
    if in_place and not gate(features, c.FEATURE_IN_PLACE_RESTART):
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
                invalid(path, sub, SUBDOMAIN_TOO_LONG_MSG if DNS1035_TOO_LONG in msg else msg)
            )

    manager = spec.get("managedBy")
    if manager is not None:
        path = "spec.managedBy"
        errs.extend(is_domain_prefixed_path(path, str(manager)))
        if len(str(manager)) > c.MAX_MANAGED_BY_LENGTH:
            errs.append(too_long(path, c.MAX_MANAGED_BY_LENGTH))
    return errs


def _validate_success_policy(policy: Mapping[str, Any], names: set[str]) -> list[FieldError]:
    """Every target of the success policy must be a ReplicatedJob."""
    return [
        internal(
            f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs",
            "spec.successPolicy.targetReplicatedJobs",
        )
        for target in policy.get("targetReplicatedJobs") or []
        if target not in names
    ]


def _validate_replicated_job_size(
    idx: int, rjob: Mapping[str, Any], jsname: str
) -> list[FieldError]:
    """The rules of one ReplicatedJob that depend on its replicas and parallelism (create, and
    `validate_shape` after an elastic update): replicas x parallelism within int32 and the
    generated Job and pod names."""
    errs: list[FieldError] = []
    path = f"spec.replicatedJobs[{idx}]"
    name = str(rjob.get("name") or "")
    reps, job_spec = t.replicas(rjob), t.job_spec(rjob)
    parallelism = job_spec.get("parallelism")
    if _int32_product_overflows(1 if parallelism is None else int(parallelism), reps):
        errs.append(
            internal(
                f"the product of replicas and parallelism must not exceed {c.MAX_INT32} "
                f"for replicatedJob '{name}'",
                path,
            )
        )
    errs.extend(_validate_generated_names(path, rjob, job_spec, jsname, name, reps))
    return errs


def _validate_replicated_job(
    idx: int,
    rjob: Mapping[str, Any],
    jsname: str,
    names: set[str],
    in_place: bool,
    features: Mapping[str, bool] | None,
) -> list[FieldError]:
    path = f"spec.replicatedJobs[{idx}]"
    name = str(rjob.get("name") or "")
    names.add(name)
    job_spec = t.job_spec(rjob)
    errs = _validate_replicated_job_size(idx, rjob, jsname)
    errs.extend(_validate_depends_on(path, rjob, name, names))
    if in_place and gate(features, c.FEATURE_IN_PLACE_RESTART):
        errs.extend(_validate_in_place_restart(f"{path}.template.spec", job_spec, name))
    return errs


def _validate_generated_names(
    path: str,
    rjob: Mapping[str, Any],
    job_spec: Mapping[str, Any],
    jsname: str,
    name: str,
    reps: int,
) -> list[FieldError]:
    """The group name and the longest Job and pod names this ReplicatedJob generates must be
    DNS-1035 labels."""
    errs: list[FieldError] = []
    group = t.group_name(rjob)
    for msg in is_dns1035_label(group):
        errs.append(
            invalid(
                f"{path}.groupName",
                group,
                GROUP_NAME_TOO_LONG_MSG if DNS1035_TOO_LONG in msg else msg,
            )
        )

    # The highest job index gives the longest Job name.
    longest_job = t.job_name(jsname, name, reps - 1)
    for msg in is_dns1035_label(longest_job):
        errs.append(
            invalid(
                f"{path}.name",
                longest_job,
                JOB_NAME_TOO_LONG_MSG if DNS1035_TOO_LONG in msg else msg,
            )
        )

    completions = job_spec.get("completions")
    if is_indexed(job_spec) and completions is not None:
        longest_pod = t.pod_hostname(jsname, name, reps - 1, int(completions) - 1) + POD_SUFFIX
        for msg in is_dns1035_label(longest_pod):
            errs.append(
                invalid(
                    f"{path}.name",
                    longest_job,  # upstream reports the Job name here too
                    POD_NAME_TOO_LONG_MSG if DNS1035_TOO_LONG in msg else msg,
                )
            )
    return errs


def _validate_depends_on(
    path: str, rjob: Mapping[str, Any], name: str, names: set[str]
) -> list[FieldError]:
    errs: list[FieldError] = []
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
    return errs


def _validate_in_place_restart(
    tpath: str, job_spec: Mapping[str, Any], name: str
) -> list[FieldError]:
    """What in-place restart asks of a ReplicatedJob's Job template (`tpath`)."""
    errs: list[FieldError] = []
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
    completions = job_spec.get("completions")
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
        if not gate(features, c.FEATURE_RESTART_JOB):
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
        indexes_by_name.setdefault(str(rule.get("name") or ""), []).append(index)
        errs.extend(_validate_failure_rule(f"{origin}[{index}]", rule, names))
    errs.extend(_duplicate_rule_names(origin, indexes_by_name))
    return errs


def _validate_failure_rule(
    rpath: str, rule: Mapping[str, Any], names: set[str]
) -> list[FieldError]:
    """One failure policy rule (at `rpath`): its name, targets and job failure reasons."""
    errs: list[FieldError] = []
    rule_name = str(rule.get("name") or "")
    if not MIN_RULE_NAME <= len(rule_name) <= MAX_RULE_NAME:
        errs.append(
            internal(
                f"invalid failure policy rule name of length {len(rule_name)}, the rule "
                f"name must be at least {MIN_RULE_NAME} characters long and at most "
                f"{MAX_RULE_NAME} characters long",
                f"{rpath}.name",
            )
        )
    if not RULE_NAME_RE.fullmatch(rule_name):
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
    return errs


def _duplicate_rule_names(
    origin: str, indexes_by_name: Mapping[str, list[int]]
) -> list[FieldError]:
    """One error per rule name used more than once."""
    errs: list[FieldError] = []
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
    if not is_indexed(job_spec) or completions is None:
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


def _int32_product_overflows(a: int, b: int) -> bool:
    return a * b > c.MAX_INT32
