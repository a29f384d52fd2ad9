"""The volumeClaimPolicies rules of a create: template names, mounts, and PVCs that exist."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobset.api import constants as c
from jobset.api import types as t
from jobset.api.validation.errors import ErrorType, FieldError, invalid
from jobset.api.validation.names import name_for_validation
from jobset.api.validation.semantic import semantic_equal
from kubeutil.names import is_dns1123_subdomain

__all__ = ["validate_volume_claim_policies", "volume_claim_pvc_names"]


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


# What kube-apiserver and the PV controller fill in on a claim the template may leave unset:
# volumeMode by defaulting, storageClassName by the DefaultStorageClass admission,
# volumeName by binding (upstream's regression fix for retained, bound claims).
_SERVER_FILLED = ("volumeMode", "storageClassName", "volumeName")


def _as_stored(spec: Any, existing: Any) -> Any:
    """The template's spec with the server-filled fields it leaves unset taken from the
    existing claim, so that a retained, bound claim matches the unchanged template."""
    if not isinstance(spec, Mapping) or not isinstance(existing, Mapping):
        return spec
    out = dict(spec)
    for key in _SERVER_FILLED:
        if out.get(key) is None and existing.get(key) is not None:
            out[key] = existing[key]
    return out


def validate_volume_claim_policies(
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
                if not semantic_equal(
                    found.get("spec"), _as_stored(template.get("spec"), found.get("spec"))
                ):
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
