"""The JobSet admission webhooks: defaulting and validation on create and update.

Both call the pure functions of `jobset.api` (one definition of the contract for the
webhook, the controller and the tests); this module adds only what needs I/O or the wire:
decoding the object, looking up the PVCs `volumeClaimPolicies` would create (validation
compares them with existing claims, for a requester who may read them: see `access.py`),
turning field errors into the 422 `Invalid` Status upstream returns, and answering
defaulting with the defaults' JSON patch.

Defaulting runs on update too (upstream's runs on create only): `kubectl apply` of an
unchanged manifest replaces the lists it holds (`replicatedJobs`, `volumeClaimPolicies`,
failure-policy rules) with the manifest's, which lack the defaults create filled in; filled
in again, the update is no change, so the CRD's immutability rules and `validate_update`
pass it, and the stored JobSet keeps its defaults.

The API server applies the CRD schema's structural defaults before calling mutating
webhooks, but validates the schema only after them, so the mutating handler may see
ill-typed values (`spec: "x"`): it answers those with a 400 naming the field instead of
failing, and the API server's own schema validation reports them properly afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from jobset.api import constants as c
from jobset.api.defaulting import defaulting_patch
from jobset.api.gang import gang_mode
from jobset.api.gang import validation_errors as gang_validation_errors
from jobset.api.regex import MANY_PATTERNS, go_regexp_error, message_pattern_count
from jobset.api.validation import (
    DEFAULT_LIMITS,
    Limits,
    invalid_status,
    validate_create,
    validate_update,
    volume_claim_pvc_names,
)
from jobset.placement.strategy import PLANNED, STRATEGY_KEY
from jobset.runtime.client import PVCS, ApiError, Client
from jobset.runtime.reviews import User
from jobset.webhooks.access import AccessReviewer, Unreviewable
from jobset.webhooks.review import AdmissionRequest, AdmissionResponse

__all__ = ["JobSetWebhook"]


def _shape_error(js: Mapping[str, Any]) -> str | None:
    """Where the object is too malformed for the API functions to read (None: readable)."""
    spec = js.get("spec")
    if spec is None:
        return None
    if not isinstance(spec, dict):
        return "spec: must be an object"
    for key in ("replicatedJobs", "volumeClaimPolicies"):
        items = spec.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return f"spec.{key}: must be an array"
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                return f"spec.{key}[{i}]: must be an object"
    for key in ("network", "successPolicy", "failurePolicy", "startupPolicy", "coordinator"):
        if spec.get(key) is not None and not isinstance(spec.get(key), dict):
            return f"spec.{key}: must be an object"
    return None


def _pattern_warnings(js: Mapping[str, Any]) -> list[str]:
    """Admission warnings for message patterns Go's regexp would not compile.

    Upstream accepts such a JobSet and skips the pattern at run time; so does this
    controller (the same YAML must be admitted the same way), but the user is told now,
    through the warning kubectl prints, instead of finding out from the controller's log.
    """
    policy = (js.get("spec") or {}).get("failurePolicy")
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not isinstance(rules, list):
        return []
    warnings: list[str] = []
    for i, rule in enumerate(rules):
        patterns = rule.get("onJobFailureMessagePatterns") if isinstance(rule, dict) else None
        for j, pattern in enumerate(patterns if isinstance(patterns, list) else []):
            error = go_regexp_error(pattern) if isinstance(pattern, str) else "not a string"
            if error is not None and len(warnings) < MAX_PATTERN_WARNINGS:
                warnings.append(
                    f"spec.failurePolicy.rules[{i}].onJobFailureMessagePatterns[{j}]: "
                    f"not a valid RE2 (Go regexp) pattern, it will never match: {error[:200]}"
                )
    return warnings


# Kubernetes caps the warnings of one admission response; a handful says enough.
MAX_PATTERN_WARNINGS = 10


def _planned_for_job_gangs(js: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A `Job` gang with exclusive placement gets the planned strategy unless another is
    chosen: with the affinity strategy followers are admitted only once their leader is
    scheduled, and a gang schedules no member before all of them exist."""
    anns = (js.get("metadata") or {}).get("annotations") or {}
    if gang_mode(js) != "Job" or not anns.get(c.EXCLUSIVE_KEY):
        return []
    if c.NODE_SELECTOR_STRATEGY_KEY in anns or STRATEGY_KEY in anns:
        return []
    path = "/metadata/annotations/" + STRATEGY_KEY.replace("~", "~0").replace("/", "~1")
    return [{"op": "add", "path": path, "value": PLANNED}]


class JobSetWebhook:
    """Handlers for `/mutate-jobset-x-k8s-io-v1alpha2-jobset` and `/validate-...`.

    `client` is used only to read PVCs at validation time (upstream reads them through its
    API reader too: a cached view would let a just-created claim slip through), and to ask
    whether the requesting user may read them (`access`; see `access.py`). `features`
    are the controller's feature gates (InPlaceRestart, RestartJob, ElasticJobSet,
    MutablePodResourcesForSuspendedJobSets and this project's ElasticReplicas change what
    validation accepts). `limits` are the controller's `--max-jobs-per-jobset` and
    `--max-pods-per-job`, the same the controller applies to stored JobSets.
    """

    def __init__(
        self,
        client: Client | None,
        features: Mapping[str, bool] | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        access: AccessReviewer | None = None,
    ) -> None:
        self.client = client
        self.features = dict(features or {})
        self.limits = limits
        # Whether the requesting user may read the claims validation would compare with.
        self.access = access or (AccessReviewer(client) if client is not None else None)

    # ------------------------------------------------------------------ mutate

    async def mutate(self, req: AdmissionRequest) -> AdmissionResponse:
        js = req.object
        if req.operation not in ("CREATE", "UPDATE") or js is None:
            return AdmissionResponse.allow()
        problem = _shape_error(js)
        if problem is not None:
            return AdmissionResponse.errored(400, f"cannot decode JobSet: {problem}")
        try:
            # The defaults' operations directly: no deep copy of the JobSet and no diff of
            # the whole object against it, which are slow on the loop for a large JobSet.
            ops = defaulting_patch(js)
            if req.operation == "CREATE":
                ops += _planned_for_job_gangs(js)
        except (TypeError, AttributeError, ValueError) as exc:
            return AdmissionResponse.errored(400, f"cannot decode JobSet: {exc}")
        return AdmissionResponse(True, patch=ops or None)

    # ------------------------------------------------------------------ validate

    async def validate(self, req: AdmissionRequest) -> AdmissionResponse:
        js = req.object
        if js is None or req.operation not in ("CREATE", "UPDATE"):
            return AdmissionResponse.allow()
        if req.operation == "UPDATE" and req.old_object is None:
            return AdmissionResponse.errored(400, "update without oldObject")
        for obj in (js, req.old_object):
            problem = None if obj is None else _shape_error(obj)
            if problem is not None:
                return AdmissionResponse.errored(400, f"cannot decode JobSet: {problem}")
        object_ns = (js.get("metadata") or {}).get("namespace")
        if req.namespace and object_ns and object_ns != req.namespace:
            # kube-apiserver never sends this; whoever did must not choose where we look.
            return AdmissionResponse.errored(
                400, "the namespace of the object does not match the namespace of the request"
            )
        try:
            if req.operation == "CREATE":
                pvcs = await self._existing_pvcs(js, req.namespace, req.user)
                errors = validate_create(
                    js, features=self.features, existing_pvcs=pvcs, limits=self.limits
                )
            else:
                assert req.old_object is not None
                errors = validate_update(
                    js, req.old_object, features=self.features, limits=self.limits
                )
            errors = [*errors, *gang_validation_errors(js)]
        except (TypeError, AttributeError, ValueError) as exc:
            return AdmissionResponse.errored(400, f"cannot decode JobSet: {exc!r}")
        if not errors:
            if message_pattern_count(js) >= MANY_PATTERNS:
                # Compiling thousands of distinct patterns is long: off the loop every other
                # admission, reconcile and lease renewal shares.
                return AdmissionResponse.allow(*await asyncio.to_thread(_pattern_warnings, js))
            return AdmissionResponse.allow(*_pattern_warnings(js))
        name = str((js.get("metadata") or {}).get("name") or req.name)
        return AdmissionResponse.with_status(invalid_status(name, errors))

    async def _existing_pvcs(
        self, js: Mapping[str, Any], namespace: str, user: User | None
    ) -> dict[str, Mapping[str, Any] | Exception]:
        """The existing PVCs among those the JobSet would create (absent ones left out).

        Only for a `user` who may `get` PVCs in the namespace (a SubjectAccessReview,
        cached briefly): for anyone else the answer is `{}`, as if no claim existed, so
        nothing in the response depends on claims the requester could not read. A review
        that cannot be made marks every claim "cannot be checked" (which says nothing
        about them either).

        A JobSet may name 50 x 50 claim templates, and a dry-run costs the tenant nothing:
        the lookups are deduplicated, at most `MAX_PVC_GETS` are single GETs (in parallel),
        and more than that are answered by one paginated LIST of the namespace, so the
        webhook's API cost is bounded whatever the JobSet asks for.
        """
        if not (js.get("spec") or {}).get("volumeClaimPolicies") or self.client is None:
            return {}
        ns = namespace or str((js.get("metadata") or {}).get("namespace") or "")
        names = list(dict.fromkeys(volume_claim_pvc_names(js)))
        if not names:
            return {}
        assert self.access is not None
        try:
            if not await self.access.allowed(user, "get", "", PVCS.plural, ns):
                return {}
        except Unreviewable:
            return dict.fromkeys(names, Unreviewable("could not review access to claims"))
        if len(names) > MAX_PVC_GETS:
            return await self._listed_pvcs(self.client, ns, set(names))
        client = self.client

        async def lookup(name: str) -> Mapping[str, Any] | Exception | None:
            try:
                return await client.get(PVCS, name, ns)
            except ApiError as err:
                return None if err.not_found else err

        found = await asyncio.gather(*(lookup(n) for n in names))
        return {n: f for n, f in zip(names, found, strict=True) if f is not None}

    @staticmethod
    async def _listed_pvcs(
        client: Client, ns: str, wanted: set[str]
    ) -> dict[str, Mapping[str, Any] | Exception]:
        out: dict[str, Mapping[str, Any] | Exception] = {}
        token = ""
        while True:
            try:
                page = await client.list(PVCS, ns, limit=PVC_LIST_PAGE, continue_token=token)
            except ApiError as err:
                return dict.fromkeys(wanted, err)  # every claim is then "cannot be checked"
            for pvc in page.get("items") or []:
                name = (pvc.get("metadata") or {}).get("name")
                if name in wanted:
                    out[name] = pvc
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return out


# Distinct claims looked up one GET each; beyond this one LIST of the namespace is cheaper.
MAX_PVC_GETS: Final = 8
PVC_LIST_PAGE: Final = 500
