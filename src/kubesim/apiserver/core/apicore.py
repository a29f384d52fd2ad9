"""The semantics of the simulated API server, independent of HTTP.

Every write - from an HTTP client or from a simulated controller inside the process -
goes through `ApiCore`, so admission, validation, resourceVersion checks, finalizers
and watch events behave the same whoever asks. The HTTP layer (`http/server.py`) only
decodes requests and encodes answers. The steps on the objects themselves are in
`objects.py`, reads in `reads.py`, patches and managedFields in `fieldmanagers.py`, what
a DELETE does in `deletion.py`.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from kubesim.apiserver.core import fieldmanagers, fieldvalidation, reads
from kubesim.apiserver.core.deleter import Deleter, commit, remove
from kubesim.apiserver.core.objects import (
    bind_pod,
    carry_over,
    check_kind,
    check_namespace,
    check_version,
    content,
    copy_meta,
    create_namespace,
    same_object,
    set_create_fields,
    tracks_generation,
    validate_meta,
)
from kubesim.apiserver.core.reads import ListResult
from kubesim.apiserver.core.request import Admission, AdmissionAttributes, ObjectHooks, Request
from kubesim.apiserver.core.store import Store, Watcher, WatchEvent
from kubesim.apiserver.registry import catalogue
from kubesim.apiserver.registry.events import event as eventsapi
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import PLAIN, Strategy
from kubesim.clock import now_rfc3339
from kubesim.machinery.errors import (
    ApiError,
    Cause,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from kubesim.machinery.selectors import FieldSelector, LabelSelector
from kubesim.machinery.uids import new_uid

__all__ = ["OFF_LOOP_BYTES", "ApiCore", "ListResult"]

# A create or update whose body is at least this large is pruned, defaulted, validated and
# its managedFields recorded in a worker thread. For a custom resource near etcd's object limit
# that is long schema walking and CEL; kube-apiserver serves other requests in other
# goroutines meanwhile, and on the one loop this server would answer nobody. The steps are
# pure functions of the object, its old version (both replaced, never mutated, on write) and
# the compiled schema; the store is read and written only back on the loop, where the version
# check and the commit follow each other with no await between.
OFF_LOOP_BYTES = 256 * 1024

P = ParamSpec("P")
R = TypeVar("R")


class ApiCore:
    """CRUD, patch, delete and watch with Kubernetes semantics over a `Store`."""

    def __init__(
        self,
        registry: Registry,
        store: Store,
        *,
        strategies: Mapping[tuple[str, str], Strategy] | None = None,
        hooks: Sequence[ObjectHooks] = (),
        admission: Admission | None = None,
        graceful_pod_deletion: bool = False,
    ) -> None:
        self.registry = registry
        self.store = store
        # The served built-ins' strategies by (group, plural), as the feature gates make them
        # (`registry/catalogue.py`); by default those of an API server with every gate off.
        self.strategies = (
            catalogue.strategies(FeatureGates({}), store) if strategies is None else strategies
        )
        # Per-type extra semantics (CRDs, admission plugins), run in this order on every write.
        self.hooks: tuple[ObjectHooks, ...] = tuple(hooks)
        self.admission = admission
        # With a kubelet, pods on a node are deleted gracefully (it confirms the deletion).
        self.graceful_pod_deletion = graceful_pod_deletion
        self._deleter = Deleter(store, self.hooks, admission, graceful_pod_deletion)

    # ------------------------------------------------------------------ reads

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.key, (namespace if rt.namespaced else "", name))
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    def try_get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.get(rt.key, (namespace if rt.namespaced else "", name))

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        return reads.list_objects(self.store, rt, namespace, labels, fields, limit, continue_token)

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        resource_version: str,
    ) -> tuple[Watcher, builtins.list[WatchEvent]]:
        """Subscribe, and return the events the watcher must see first (`reads.watch`)."""
        return reads.watch(self.store, rt, namespace, labels, fields, resource_version)

    def unwatch(self, rt: ResourceType, watcher: Watcher) -> None:
        reads.unwatch(self.store, rt, watcher)

    # ----------------------------------------------------------------- create

    def _validate(
        self,
        rt: ResourceType,
        strategy: Strategy,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> builtins.list[Cause]:
        causes = [] if _meta_kept(obj, old) else validate_meta(rt, obj)
        causes += strategy.validate(rt, obj, old)
        for hook in self.hooks:
            causes += hook.validate(rt, obj, old)
        return causes

    def _strategy(self, rt: ResourceType) -> Strategy:
        return self.strategies.get(rt.key, PLAIN)

    def _run_hooks(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, req: Request
    ) -> dict[str, Any]:
        for hook in self.hooks:
            obj = hook.before_write(rt, obj, old, req)
        return obj

    async def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: dict[str, Any],
        req: Request | None = None,
        *,
        applied: bool = False,
    ) -> dict[str, Any]:
        req = req or Request()
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        if not applied:  # an apply's configuration was checked and pruned as such
            body = await _decoded(rt, body, req)
        if rt.storage is not None:
            check_kind(rt, dict(body))
            rt, body = self._stored(rt), eventsapi.to_core(body)
        obj = copy_meta(body)
        check_kind(rt, obj)
        meta = obj["metadata"]
        namespace = create_namespace(rt, meta, namespace)
        check_namespace(self.store, rt, namespace, creating=True)
        set_create_fields(rt, meta)
        strategy = self._strategy(rt)
        obj = strategy.prepare_for_create(rt, obj)
        obj = await _off_loop(req, self._run_hooks, rt, obj, None, req)
        attrs = AdmissionAttributes(rt, "", namespace, meta["name"], "CREATE", req)
        if self.admission is not None:
            mutated = await self.admission.mutate(attrs, obj, None)
            if mutated is not obj:  # a webhook patched it: prune and default the result
                mutated = fieldvalidation.pruned(rt, mutated)
                obj = await _off_loop(req, self._run_hooks, rt, mutated, None, req)
        causes = await _off_loop(req, self._validate, rt, strategy, obj, None)
        if causes:
            raise invalid(rt.group, rt.kind, obj["metadata"]["name"], causes)
        if self.admission is not None:
            await self.admission.validate(attrs, obj, None)
        if not applied:  # an apply already recorded its manager's Apply entry
            obj = await _off_loop(req, fieldmanagers.record_managers, obj, None, req, "Update", rt)
        # No await from this check to the commit: nothing can be stored in between.
        if self.store.get(rt.key, (namespace, obj["metadata"]["name"])) is not None:
            raise already_exists(rt.group, rt.plural, obj["metadata"]["name"])
        if req.dry_run:
            return obj
        return self._commit(rt, obj, None)

    def _stored(self, view: ResourceType) -> ResourceType:
        """The type whose store a view type (`ResourceType.storage`) reads and writes."""
        assert view.storage is not None
        stored = self.registry.get(*view.storage)
        if stored is None:
            raise ApiError(500, "InternalError", f"no stored type for {view.qualified}")
        return stored

    def write_trusted(
        self, rt: ResourceType, obj: dict[str, Any], now: str | None = None
    ) -> dict[str, Any]:
        """Create or replace an object the simulator's own components built (their Events),
        without admission, validation or managedFields: what they write is valid by
        construction, and at tens of thousands of pods those steps would cost more than
        the write. Namespace rules hold as for any create; `now` is the creation time
        (RFC 3339) if the caller has it formatted already. Returns the stored object."""
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "") if rt.namespaced else ""
        old = self.store.get(rt.key, (namespace, meta["name"]))
        if old is None:
            check_namespace(self.store, rt, namespace, creating=True)
            meta["uid"] = new_uid()
            meta["creationTimestamp"] = now or now_rfc3339()
        else:
            old_meta = old["metadata"]
            meta["uid"] = old_meta["uid"]
            meta["creationTimestamp"] = old_meta.get("creationTimestamp")
        obj["apiVersion"] = rt.group_version
        obj["kind"] = rt.kind
        return self._commit(rt, obj, old)

    def _commit(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        return commit(self.store, self.hooks, rt, obj, old)

    # ----------------------------------------------------------------- update

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        req: Request | None = None,
        subresource: str = "",
    ) -> dict[str, Any]:
        req = req or Request()
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        body = await _decoded(rt, body, req, subresource)
        if rt.storage is not None:
            check_kind(rt, dict(body))
            rt, body = self._stored(rt), eventsapi.to_core(body)
        namespace = namespace if rt.namespaced else ""
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        old = self.store.get(rt.key, (namespace, name))
        if old is None:
            raise not_found(rt.group, rt.plural, name)
        want_rv = (body.get("metadata") or {}).get("resourceVersion")
        check_version(rt, name, want_rv, old)
        obj = copy_meta(body)
        check_kind(rt, obj)
        return await self._update_from(rt, old, obj, req, subresource)

    async def bind(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        binding: dict[str, Any],
        req: Request | None = None,
    ) -> dict[str, Any]:
        """`pods/binding`: assign the pod to `binding.target.name`; the bound pod.

        As kube-apiserver's BindingREST: admission sees a CREATE of the Binding on the
        `binding` subresource (so webhooks for `pods` are not called, those for
        `pods/binding` are), and the pod's nodeName is then written without another
        admission pass. A pod already assigned, or whose uid is not the Binding's
        `metadata.uid` (when given), is a 409 Conflict.
        """
        req = req or Request()
        if self.admission is not None:
            attrs = AdmissionAttributes(rt, "binding", namespace, name, "CREATE", req)
            binding = await self.admission.mutate(attrs, binding, None)
            await self.admission.validate(attrs, binding, None)
        if not ((binding or {}).get("target") or {}).get("name"):
            raise bad_request("binding target name is required")
        pod = self.get(rt, namespace, name)
        bound = bind_pod(rt, name, pod, binding)
        return await self._update_from(rt, pod, bound, req, "binding", admit=False)

    async def _update_from(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        obj: dict[str, Any],
        req: Request,
        subresource: str,
        operation: str = "Update",
        *,
        admit: bool = True,
    ) -> dict[str, Any]:
        old_meta = old["metadata"]
        name = old_meta["name"]
        namespace = old_meta.get("namespace", "")
        obj = carry_over(rt, old, obj, subresource)
        strategy = self._strategy(rt)
        obj = strategy.prepare_for_update(rt, obj, old, subresource)
        tracked = tracks_generation(rt)
        if tracked:
            obj["metadata"]["generation"] = old_meta.get("generation", 1)
        else:
            obj["metadata"].pop("generation", None)
        obj = await _off_loop(req, self._run_hooks, rt, obj, old, req)
        attrs = AdmissionAttributes(rt, subresource, namespace, name, "UPDATE", req)
        admission = self.admission if admit else None
        if admission is not None:
            mutated = await admission.mutate(attrs, obj, old)
            if mutated is not obj:  # a webhook patched it: prune and default the result
                mutated = fieldvalidation.pruned(rt, mutated, subresource)
                obj = await _off_loop(req, self._run_hooks, rt, mutated, old, req)
        # After mutating admission, as kube-apiserver's PrepareForUpdate: a change a webhook
        # takes back (defaults a re-applied manifest lacked) is no new generation.
        if tracked and subresource != "status" and content(obj) != content(old):
            obj["metadata"]["generation"] = old_meta.get("generation", 1) + 1
        causes = await _off_loop(req, self._validate, rt, strategy, obj, old)
        if causes:
            raise invalid(rt.group, rt.kind, name, causes)
        if admission is not None:
            await admission.validate(attrs, obj, old)
        if operation != "Apply":
            # The diff of a large object runs off the loop,
            # before the version check: from the check to the commit nothing awaits.
            obj = await _off_loop(
                req, fieldmanagers.record_managers, obj, old, req, "Update", rt, subresource
            )
        current = self.store.get(rt.key, (namespace, name))
        if current is None:
            raise not_found(rt.group, rt.plural, name)
        check_version(rt, name, old_meta["resourceVersion"], current)
        if same_object(obj, old):
            return old  # no-op writes do not bump resourceVersion, as in Kubernetes
        if req.dry_run:
            return obj
        if obj["metadata"].get("deletionTimestamp") and not self._deleter.blocked(rt, obj):
            return remove(self.store, self.hooks, rt, obj)
        return self._commit(rt, obj, old)

    # ------------------------------------------------------------------ patch

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        req: Request | None = None,
        subresource: str = "",
    ) -> dict[str, Any]:
        req = req or Request()
        namespace = namespace if rt.namespaced else ""
        content_type = content_type.split(";")[0].strip()
        view: ResourceType | None = None
        if rt.storage is not None:
            if content_type in fieldmanagers.APPLY_TYPES:
                raise _view_apply_refused(rt)
            view, rt = rt, self._stored(rt)
        checking = req.field_validation in ("Warn", "Strict") and subresource != "status"
        if content_type in fieldmanagers.APPLY_TYPES and isinstance(body, dict):
            if checking:
                fieldvalidation.enforce(fieldvalidation.apply_problems(rt, body), req)
            body = fieldvalidation.pruned(rt, body)  # nor is any manager's field unknown
        for attempt in range(8):
            old = self.store.get(rt.key, (namespace, name))
            if content_type in fieldmanagers.APPLY_TYPES:
                if old is None:
                    return await self._apply_create(rt, namespace, name, body, req, subresource)
                patched = fieldmanagers.apply_to(rt, name, old, body, req, subresource)
                operation = "Apply"
            else:
                if old is None:
                    raise not_found(rt.group, rt.plural, name)
                patched = _patched(rt, view, old, content_type, body)
                operation = "Update"
                if checking and attempt == 0:
                    raw = req.raw_body or None
                    found = fieldvalidation.patch_problems(rt, content_type, raw, body, patched)
                    fieldvalidation.enforce(found, req)
                patched = fieldvalidation.pruned(rt, patched, subresource)
            want_rv = (patched.get("metadata") or {}).get("resourceVersion")
            check_version(rt, name, want_rv, old)
            obj = copy_meta(patched)
            check_kind(rt, obj)
            obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            try:
                return await self._update_from(rt, old, obj, req, subresource, operation)
            except ApiError as err:
                # A concurrent write between our read and our write: patches retry, as
                # the real server's GuaranteedUpdate does.
                if err.code == 409 and err.reason == "Conflict" and not want_rv:
                    continue
                raise
        raise conflict(rt.group, rt.plural, name, "too many concurrent writes")

    async def _apply_create(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        req: Request,
        subresource: str,
    ) -> dict[str, Any]:
        """Server-side apply of an object that does not exist: a create."""
        applied = fieldmanagers.apply_create(rt, namespace, name, body, req, subresource)
        return await self.create(rt, namespace, applied, req, applied=True)

    # ----------------------------------------------------------------- delete

    async def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        req: Request | None = None,
    ) -> dict[str, Any]:
        """Delete (`deleter.py`): removed at once, or marked with a deletionTimestamp while
        finalizers or a pod's grace period hold it."""
        return await self._deleter.delete(rt, namespace, name, options, req)

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        options: dict[str, Any] | None = None,
        req: Request | None = None,
    ) -> builtins.list[dict[str, Any]]:
        return await self._deleter.delete_collection(rt, namespace, labels, fields, options, req)

    def force_remove(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Remove at once, whatever the finalizers: for a kubelet ending a pod's grace period."""
        self._deleter.force_remove(rt, obj)


async def _off_loop(req: Request, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args)`, in a worker thread when the request is large (OFF_LOOP_BYTES)."""
    if req.body_bytes >= OFF_LOOP_BYTES:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)


async def _decoded(
    rt: ResourceType, body: dict[str, Any], req: Request, subresource: str = ""
) -> dict[str, Any]:
    """A create or update body as decoding it keeps it: its unknown and duplicate fields
    refused, warned about or ignored as `fieldValidation` says, and the unknown ones
    dropped whatever it says (fieldvalidation.py). A status write - the controllers' hot
    path - is not checked (its status is its writer's) and is pruned in `.status` only.
    A simulated component's own write (`req.own`) is taken as it is."""
    if req.own:
        return body
    if subresource != "status" and req.field_validation in ("Warn", "Strict"):
        raw = req.raw_body or None
        problems = await _off_loop(req, fieldvalidation.body_problems, rt, raw, body)
        kind = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
        fieldvalidation.enforce(problems, req, kind)
    return await _off_loop(req, fieldvalidation.pruned, rt, body, subresource)


def _meta_kept(obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """True when an update keeps the name, labels and annotations of the stored object
    themselves (a status write, a binding): the rules `validate_meta` checks held when
    that object was stored, and hold for the same values."""
    if old is None:
        return False
    meta, old_meta = obj["metadata"], old["metadata"]
    return (
        meta.get("name") == old_meta.get("name")
        and meta.get("labels") is old_meta.get("labels")
        and meta.get("annotations") is old_meta.get("annotations")
    )


def _view_apply_refused(rt: ResourceType) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"server-side apply of {rt.qualified} is not supported by the simulated "
        "API server: apply the core/v1 object instead",
    )


def _patched(
    rt: ResourceType, view: ResourceType | None, old: dict[str, Any], content_type: str, body: Any
) -> dict[str, Any]:
    """`old` with a (non-apply) patch applied; through a view type, the patch applies to what
    the client sees and the stored form is what that becomes."""
    if view is None:
        return fieldmanagers.apply_patch(rt, old, content_type, body)
    shown = eventsapi.to_events_v1(old)
    stored: dict[str, Any] = eventsapi.to_core(
        fieldmanagers.apply_patch(view, shown, content_type, body)
    )
    return stored
