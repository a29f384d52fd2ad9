"""CustomResourceDefinitions: registering one serves its types; its schema governs their objects.

As in kube-apiserver, a CRD write is validated (names, versions, a compilable structural
schema), its status says Established/NamesAccepted, and each custom object written is
pruned, defaulted and validated (including CEL rules) against the schema of the version
it was sent in.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.columns import name
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.clock import now_rfc3339
from kubesim.machinery import field as fe
from kubesim.machinery import schema as structural
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    False,
    short_names=("crd", "crds"),
    subresources=frozenset(("status",)),
)
CRD_KEY = TYPE.key
# Kept by pruning and defaulting at an object's root as they are.
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def _version_crd_info(
    spec: dict[str, Any], version: dict[str, Any], schema_rv: int
) -> dict[str, Any]:
    raw = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    return {
        "schema": raw,
        "compiled": structural.compile_schema(raw),
        "versions": spec.get("versions") or [],
        "additionalPrinterColumns": version.get("additionalPrinterColumns"),
        "selectableFields": version.get("selectableFields") or [],
        "storage": bool(version.get("storage")),
        # The CRD's resourceVersion when this schema was registered: an object written after
        # it was pruned and defaulted under this very schema (`_carried`).
        "schema_rv": schema_rv,
    }


def _int_rv(obj: dict[str, Any] | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _carried(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> frozenset[str]:
    """The top-level fields of `obj` that are the stored object's own values (the same
    objects, as a status write carries `spec` over), stored after the schema of `rt` was
    registered and through its version.

    Pruning and defaulting are idempotent, so walking such a field again under the same schema
    gives it back unchanged: a status write of a large JobSet walks its status, not its
    spec. An object written before the CRD
    last changed is walked whole, so a new default reaches it on its next write as before.
    """
    assert rt.crd is not None
    if old is None or old.get("apiVersion") != f"{rt.group}/{rt.version}":
        return frozenset()
    if _int_rv(old) <= rt.crd["schema_rv"]:
        return frozenset()
    return frozenset(
        k
        for k, v in obj.items()
        if k not in ROOT_FIELDS and isinstance(v, dict | list) and old.get(k) is v
    )


def _walk_changed(
    obj: dict[str, Any], carried: frozenset[str], compiled: structural.CompiledSchema
) -> dict[str, Any]:
    """`obj` pruned and defaulted as a whole would be, walking only the fields not `carried`
    (which are kept as they are); fields and their order come out as from the full walk."""
    walked = structural.apply_defaults(
        structural.prune({k: v for k, v in obj.items() if k not in carried}, compiled), compiled
    )
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k in carried:
            out[k] = v
        elif k in walked:
            out[k] = walked[k]
    for k, v in walked.items():  # root defaults, after the fields given, as the full walk adds
        if k not in out and k not in carried:
            out[k] = v
    return out


def types_of(crd: dict[str, Any]) -> list[ResourceType]:
    """The served ResourceTypes a CRD object describes (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    schema_rv = _int_rv(crd)
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subs = set()
        declared = version.get("subresources") or {}
        if "status" in declared:
            subs.add("status")
        if "scale" in declared:
            subs.add("scale")
        out.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=frozenset(subs),
                categories=tuple(names.get("categories") or ()),
                crd=_version_crd_info(spec, version, schema_rv),
                singular_name=names.get("singular") or names["kind"].lower(),
            )
        )
    return out


def validate_crd(crd: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    if not group or "." not in group:
        causes.append(fe.invalid("spec.group", group, "should be a domain with at least one dot"))
    for key in ("plural", "kind"):
        if not names.get(key):
            causes.append(fe.required(f"spec.names.{key}"))
    if names.get("plural") and group and crd["metadata"]["name"] != f"{names['plural']}.{group}":
        causes.append(
            fe.invalid(
                "metadata.name",
                crd["metadata"]["name"],
                'must be spec.names.plural+"."+spec.group',
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            fe.not_supported("spec.scope", spec.get("scope", ""), ("Cluster", "Namespaced"))
        )
    versions = spec.get("versions") or []
    if not versions:
        causes.append(
            fe.required("spec.versions", "must have exactly one version marked as storage version")
        )
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            fe.invalid(
                "spec.versions", fe.OMIT, "must have exactly one version marked as storage version"
            )
        )
    for i, version in enumerate(versions):
        raw = (version.get("schema") or {}).get("openAPIV3Schema")
        if raw is None:
            causes.append(
                fe.required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required")
            )
            continue
        try:
            structural.compile_schema(raw)
        except ValueError as exc:
            causes.append(
                fe.invalid(f"spec.versions[{i}].schema.openAPIV3Schema", fe.OMIT, str(exc))
            )
    return causes


class CrdHooks:
    """Plugs CRD semantics into `ApiCore` writes: a CRD write serves its types in `registry`;
    its deletion stops serving them and drops their objects from `store`."""

    def __init__(self, registry: Registry, store: Store) -> None:
        self.registry = registry
        self.store = store

    def before_write(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, req: Request
    ) -> dict[str, Any]:
        if rt.key == CRD_KEY:
            return self._crd_status(obj, old)
        if rt.crd is None:
            return obj
        compiled = rt.crd["compiled"]
        meta = obj.get("metadata")
        carried = _carried(rt, obj, old)
        if carried:
            out = _walk_changed(obj, carried, compiled)
        else:
            out = structural.apply_defaults(structural.prune(obj, compiled), compiled)
        out["metadata"] = meta
        return out

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        if rt.key == CRD_KEY:
            return validate_crd(obj)
        if rt.crd is None:
            return []
        return structural.validate(obj, rt.crd["compiled"], old)

    def after_write(
        self, rt: ResourceType, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        if rt.key != CRD_KEY:
            return
        registry = self.registry
        if obj is None:
            assert old is not None
            spec = old.get("spec") or {}
            names = spec.get("names") or {}
            registry.remove_group_resource(spec.get("group", ""), names.get("plural", ""))
            self.store.drop_resource((spec.get("group", ""), names.get("plural", "")))
            return
        if obj["metadata"].get("deletionTimestamp"):
            return
        spec = obj.get("spec") or {}
        registry.remove_group_resource(spec["group"], spec["names"]["plural"])
        for t in types_of(obj):
            registry.add(t)

    def _crd_status(self, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        names = dict(spec.get("names") or {})
        if names.get("kind"):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        stamp = now_rfc3339()
        prev = {c["type"]: c for c in ((old or {}).get("status") or {}).get("conditions") or []}

        def cond(ctype: str, reason: str, message: str) -> dict[str, Any]:
            since = prev.get(ctype, {}).get("lastTransitionTime", stamp)
            return {
                "type": ctype,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": since,
            }

        obj["status"] = {
            "conditions": [
                cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "acceptedNames": names,
            "storedVersions": sorted(
                {v["name"] for v in spec.get("versions") or [] if v.get("storage")}
                | set(((old or {}).get("status") or {}).get("storedVersions") or [])
            ),
        }
        return obj


RESOURCE = Resource(
    TYPE,
    columns=(
        ("Name", "string", 0, name),
        ("Created At", "date", 0, lambda o: o["metadata"].get("creationTimestamp", "")),
    ),
)
