"""`metadata.managedFields`: decoding and encoding the entries, and `update_managed_fields`, the
bookkeeping of ordinary writes (create, update, patch) by their Update managers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from kubesim.machinery.patch.builtin import builtin_patch_schema
from kubesim.machinery.patch.common import MISSING, FieldPath, JsonDict
from kubesim.machinery.patch.fieldpaths import (
    created_fields,
    diff_fields,
    fields_to_paths,
    paths_to_fields,
)
from kubesim.machinery.patch.schema import PatchSchema

# --------------------------------------------------------------------------- managedFields

# Fields nobody owns: the API server strips them from every manager's set (stripMetaManager).
_STRIPPED: Final[frozenset[FieldPath]] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        ("f:metadata", "f:name"),
        ("f:metadata", "f:namespace"),
        ("f:metadata", "f:creationTimestamp"),
        ("f:metadata", "f:selfLink"),
        ("f:metadata", "f:uid"),
        ("f:metadata", "f:clusterName"),
        ("f:metadata", "f:generation"),
        ("f:metadata", "f:managedFields"),
        ("f:metadata", "f:resourceVersion"),
    }
)
_STRIPPED_META: Final = frozenset(p[1] for p in _STRIPPED if len(p) == 2)

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Entry:
    """One `metadata.managedFields` entry, its FieldsV1 decoded to a set of paths."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str
    fields: frozenset[FieldPath]

    @property
    def ident(self) -> tuple[str, str, str, str]:
        # As kube-apiserver keys managers: Apply entries are one per manager and subresource,
        # Update entries one per manager, subresource and apiVersion.
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, self.subresource, version)

    def encode(self, fields_v1: JsonDict | None = None) -> JsonDict:
        """The entry as stored; `fields_v1`, when given, is its FieldsV1 already encoded."""
        out: JsonDict = {"manager": self.manager, "operation": self.operation}
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = paths_to_fields(self.fields) if fields_v1 is None else fields_v1
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def decode_entries(raw: Any) -> list[Entry]:
    """Parse managedFields; entries that are not FieldsV1 (or not entries at all) are dropped,
    and entries for the same manager identity are united, as the real decoder tolerates."""
    if not isinstance(raw, list):
        return []
    merged: dict[tuple[str, str, str, str], Entry] = {}
    for item in raw:
        if not isinstance(item, dict) or item.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        paths: set[FieldPath] = set()
        fields_to_paths(item.get("fieldsV1") or {}, (), paths)
        entry = Entry(
            manager=str(item.get("manager") or ""),
            operation=str(item.get("operation") or "Update"),
            api_version=str(item.get("apiVersion") or ""),
            subresource=str(item.get("subresource") or ""),
            time=str(item.get("time") or ""),
            fields=frozenset(paths),
        )
        previous = merged.get(entry.ident)
        if previous is not None:
            entry = replace(entry, fields=previous.fields | entry.fields)
        merged[entry.ident] = entry
    return list(merged.values())


def _encode_entries(entries: Iterable[Entry]) -> list[JsonDict]:
    # kube-apiserver's order: by operation (Apply first), time, manager, apiVersion, subresource.
    ordered = sorted(
        entries, key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource)
    )
    return [e.encode() for e in ordered]


def without_managed_fields(obj: Mapping[str, Any]) -> JsonDict:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        body = dict(obj)
        body["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        return body
    return dict(obj)


def with_managed_fields(obj: Mapping[str, Any], entries: Sequence[Entry]) -> JsonDict:
    return _with_encoded_entries(obj, _encode_entries(entries))


def _with_encoded_entries(obj: Mapping[str, Any], encoded: list[JsonDict]) -> JsonDict:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    if encoded:
        meta["managedFields"] = encoded
    else:
        meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _stripped_created(fields: JsonDict, body: Mapping[str, Any]) -> JsonDict | None:
    """`created_fields` without the fields nobody owns (`_STRIPPED`), or None if one of those
    is not a plain value (its sub-fields would stay owned: the general path handles that)."""
    meta = body["metadata"]
    plain = [body.get("apiVersion"), body.get("kind")] + [meta.get(k[2:]) for k in _STRIPPED_META]
    if any(isinstance(value, dict | list) for value in plain):
        return None
    out = {k: v for k, v in fields.items() if k not in ("f:apiVersion", "f:kind")}
    kept = {k: v for k, v in out.get("f:metadata", {}).items() if k not in _STRIPPED_META}
    kept.pop(".", None)
    if kept:
        out["f:metadata"] = kept
    else:
        out.pop("f:metadata", None)
    return out


def without_ignored(paths: Iterable[FieldPath], ignore: Collection[str]) -> set[FieldPath]:
    """Drop the stripped metadata fields and the sub-trees of top-level fields in `ignore`."""
    ignored = {"f:" + name for name in ignore}
    return {p for p in paths if p not in _STRIPPED and not (p and p[0] in ignored)}


def update_managed_fields(
    old: JsonDict | None,
    new: JsonDict,
    manager: str,
    operation: str,
    now: str,
    *,
    subresource: str = "",
    schema: PatchSchema | None = None,
) -> JsonDict:
    """Record an ordinary create/update/patch by `manager` in `new`'s managedFields and return
    the new object (the inputs are not modified).

    As kube-apiserver does: the manager's entry (one per manager, operation, apiVersion and
    subresource) gains every field the request added or changed and gets `time = now`; fields
    the request changed or removed are taken away from every other entry (an update always
    wins, conflicts are only for apply); entries left empty disappear. Managed fields supplied
    in `new` replace the stored ones (that is how kubectl migrates client-side apply to
    server-side apply), `[{}]` clears them, and an existing object without managed fields stays
    untracked; a create whose managed fields already hold this manager's Apply entry (made by
    `server_side_apply`) is left as it is. `operation` is normally "Update". `schema` defaults
    to the built-in schema of `new`'s kind (give the CRD's for custom resources, so that their
    list items are keyed right).

    Simplified: there is no cap on the number of Update entries (the real server folds the
    oldest into "ancient-changes" past 10)."""
    if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
        return new
    if schema is None:
        schema = _schema_for(new)
    supplied = new["metadata"].get("managedFields")
    if supplied == [{}]:
        entries: list[Entry] = []
    elif supplied:
        entries = decode_entries(supplied)
    else:
        entries = decode_entries(((old or {}).get("metadata") or {}).get("managedFields"))
    if old is not None and not entries:
        # Objects that predate field tracking stay untracked until someone applies.
        return without_managed_fields(new)
    if old is None and any(
        e.manager == manager and e.operation == "Apply" and e.subresource == subresource
        for e in entries
    ):
        # A create that `server_side_apply` already recorded: it owns what it applied, and an
        # Update entry on top would make every later apply by the same manager conflict.
        return new
    new_body = without_managed_fields(new)
    if old is None and not entries:
        # A plain create (nearly every write of a controller): its entry holds every field
        # it sets, built in one walk instead of field paths, a diff and a trie - a third
        # of the simulated API server's CPU per created Job went there.
        created = _stripped_created(
            created_fields(new_body, schema.root, typed=schema.typed), new_body
        )
        if created is not None:
            if not created:
                return with_managed_fields(new_body, [])
            entry = Entry(
                manager, operation, str(new.get("apiVersion") or ""), subresource, now, frozenset()
            )
            return _with_encoded_entries(new_body, [entry.encode(created)])
    return _record_diff(old, new, new_body, entries, manager, operation, now, subresource, schema)


def _record_diff(
    old: JsonDict | None,
    new: JsonDict,
    new_body: JsonDict,
    entries: list[Entry],
    manager: str,
    operation: str,
    now: str,
    subresource: str,
    schema: PatchSchema,
) -> JsonDict:
    """`update_managed_fields` in general: the request's diff against `old` taken from every
    other entry and given to the manager's own."""
    if old is not None:
        baseline: Any = without_managed_fields(old)
    elif schema.typed:
        baseline = {k: {} for k in ("spec", "status") if isinstance(new_body.get(k), dict)}
    else:
        baseline = MISSING
    diff = diff_fields(baseline, new_body, schema.root)
    changed = diff.changed()
    touched = changed | diff.removed
    mine = without_ignored(changed, ())
    api_version = str(new.get("apiVersion") or "")
    ident = (manager, operation, subresource, "" if operation == "Apply" else api_version)
    result: list[Entry] = []
    own: Entry | None = None
    for entry in entries:
        kept = entry.fields - touched
        if entry.ident == ident:
            own = replace(entry, fields=frozenset(kept))
        elif kept:
            result.append(replace(entry, fields=frozenset(kept)))
    if mine:
        fields = (own.fields if own else frozenset()) | mine
        own = Entry(manager, operation, api_version, subresource, now, frozenset(fields))
    if own is not None and own.fields:
        result.append(own)
    return with_managed_fields(new_body, result)


def _schema_for(obj: Mapping[str, Any]) -> PatchSchema:
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0]
    return builtin_patch_schema(group, str(obj.get("kind") or ""))
