"""PATCH for the simulated API server: JSON patch, JSON merge patch, strategic merge patch and
server-side apply, plus the `metadata.managedFields` bookkeeping of ordinary writes.

Real clients depend on the exact semantics here: `kubectl patch`, `kubectl apply` (client-side it
sends a three-way strategic merge patch built from the server's OpenAPI, server-side it sends the
whole object as an apply patch), Helm (server-side apply by default in v4, three-way strategic
merge otherwise) and controllers that read `managedFields`. So the behaviour follows Kubernetes'
own implementations -- `k8s.io/apimachinery/pkg/util/strategicpatch` for strategic merge patch
and `sigs.k8s.io/structured-merge-diff` for server-side apply -- rather than a simpler model.

Everything is a pure function over JSON values (`dict`/`list`/scalars): no I/O, no asyncio, and
inputs are never mutated. Results share unchanged sub-trees with the inputs, so callers must
treat both as immutable (the API server never edits a stored object in place).

Where things live:

- `common.py` - `PatchError`, `ConflictError` / `FieldConflict`, the JSON types.
- `schema.py` - `PatchSchema`, `SchemaNode`, `ListStrategy`: each list's merge semantics.
- `builtin.py` - the built-in types' table (`patchStrategy`/`patchMergeKey` tags and
  `+listType` markers of k8s.io/api) and `builtin_patch_schema`.
- `crd.py` - `crd_patch_schema`, from `x-kubernetes-list-type` & co. of a structural schema.
- `json_patch.py`, `merge_patch.py` - RFC 6902 JSON patch and RFC 7386 merge patch.
- `strategic.py` - strategic merge patch and its `$patch` / `$retainKeys` / `$setElementOrder`
  directives.
- `fieldpaths.py` - FieldsV1 field paths: the fields a configuration sets, diffs between objects.
- `managed_fields.py` - managedFields entries and `update_managed_fields` for ordinary writes.
- `apply.py` - `server_side_apply`: merge, prune, conflicts, the manager's Apply entry.
"""

from kubesim.machinery.patch.apply import server_side_apply
from kubesim.machinery.patch.builtin import builtin_patch_schema
from kubesim.machinery.patch.common import ConflictError, FieldConflict, PatchError
from kubesim.machinery.patch.crd import crd_patch_schema
from kubesim.machinery.patch.json_patch import apply_json_patch
from kubesim.machinery.patch.managed_fields import update_managed_fields
from kubesim.machinery.patch.merge_patch import apply_merge_patch
from kubesim.machinery.patch.schema import ListStrategy, PatchSchema, SchemaNode
from kubesim.machinery.patch.strategic import apply_strategic_merge_patch

__all__ = [
    "ConflictError",
    "FieldConflict",
    "ListStrategy",
    "PatchError",
    "PatchSchema",
    "SchemaNode",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "builtin_patch_schema",
    "crd_patch_schema",
    "server_side_apply",
    "update_managed_fields",
]
