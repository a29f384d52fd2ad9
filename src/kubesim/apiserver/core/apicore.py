"""The semantics of the simulated API server, independent of HTTP.

Every write — from an HTTP client or from a simulated controller inside the process —
goes through `ApiCore`, so admission, validation, resourceVersion checks, finalizers
and watch events behave the same whoever asks. The HTTP layer (`server.py`) only
decodes requests and encodes answers.
"""

from __future__ import annotations

import asyncio
import builtins
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from kubesim.apiserver.core import deletion
from kubesim.apiserver.core.request import (
    SYSTEM_USER,
    Admission,
    AdmissionAttributes,
    ObjectHooks,
    Request,
)
from kubesim.apiserver.core.store import ObjectKey, Store, Watcher, WatchEvent
from kubesim.apiserver.registry import catalogue
from kubesim.apiserver.registry.events import event as eventsapi
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import PLAIN, Strategy
from kubesim.clock import now_rfc3339
from kubesim.machinery import field as fe
from kubesim.machinery import patch as patching
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
from kubeutil import names

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"

_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes' generateName


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


@dataclass
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str
    remaining: int | None


# Built-in types whose strategy maintains metadata.generation (custom resources always do).
_GENERATION_TYPES = frozenset(
    {
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ingresses"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    }
)


def tracks_generation(rt: ResourceType) -> bool:
    return rt.crd is not None or rt.key in _GENERATION_TYPES


def _copy_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of the object with its own metadata dict (so metadata can be edited)."""
    out = dict(obj)
    out["metadata"] = dict(obj.get("metadata") or {})
    return out


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """What counts as spec for generation: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _untimed(entries: Any) -> Any:
    if not isinstance(entries, list):
        return entries
    return [
        {k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e for e in entries
    ]


def _same_object(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Equal but for resourceVersion and managedFields timestamps: a write that changes nothing."""
    if new == old:
        return True
    new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
    if {k: v for k, v in new.items() if k != "metadata"} != {
        k: v for k, v in old.items() if k != "metadata"
    }:
        return False
    skip = ("resourceVersion", "managedFields")
    if {k: v for k, v in new_meta.items() if k not in skip} != {
        k: v for k, v in old_meta.items() if k not in skip
    }:
        return False
    return bool(_untimed(new_meta.get("managedFields")) == _untimed(old_meta.get("managedFields")))


def encode_continue(rv: int, key: ObjectKey) -> str:
    import base64

    import orjson

    raw = orjson.dumps({"rv": rv, "ns": key[0], "name": key[1]})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, ObjectKey]:
    import base64

    import orjson

    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        return int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except Exception as exc:  # any malformed token is the client's error
        raise bad_request(f"continue key is not valid: {exc}") from None


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
        rs = self.store.resource(rt.key)
        start_after: ObjectKey | None = None
        list_rv = self.store.rv
        if continue_token:
            list_rv, start_after = decode_continue(continue_token)
        ns = namespace if rt.namespaced else None
        items: list[dict[str, Any]] = []
        last: ObjectKey | None = None
        more = False
        for obj in rs.range(ns, start_after):
            meta = obj["metadata"]
            if labels is not None and not labels.matches(meta.get("labels")):
                continue
            if fields is not None and not fields.matches(obj):
                continue
            if limit and len(items) >= limit:
                more = True
                break
            items.append(obj)
            last = (meta.get("namespace", ""), meta["name"])
        token = encode_continue(list_rv, last) if more and last is not None else ""
        return ListResult(items, str(list_rv), token, None)

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        resource_version: str,
    ) -> tuple[Watcher, builtins.list[WatchEvent]]:
        """Subscribe, and return the events the watcher must see first.

        No resourceVersion (or "0"): synthetic ADDED events for the current state.
        A resourceVersion: the history after it, or ApiError 410 when compacted.
        """
        rs = self.store.resource(rt.key)
        ns = namespace if rt.namespaced else None
        watcher = Watcher(ns, labels, fields)
        if resource_version in ("", "0"):
            initial = [
                WatchEvent("ADDED", obj, int(obj["metadata"]["resourceVersion"]))
                for obj in rs.range(ns)
                if (labels is None or labels.matches(obj["metadata"].get("labels")))
                and (fields is None or fields.matches(obj))
            ]
        else:
            try:
                rv = int(resource_version)
            except ValueError:
                raise bad_request(f"invalid resource version: {resource_version!r}") from None
            history = rs.events_since(rv)
            if history is None:
                raise ApiError(
                    410, "Expired", f"too old resource version: {rv} ({rs.compacted_rv})"
                )
            initial = []
            for ev in history:
                probe = Watcher(ns, labels, fields)
                probe.offer(ev)
                initial.extend(probe.queue)
        rs.watchers.add(watcher)
        return watcher, initial

    def unwatch(self, rt: ResourceType, watcher: Watcher) -> None:
        watcher.close()
        rs = self.store.resources.get(rt.key)
        if rs is not None:
            rs.watchers.discard(watcher)

    # ----------------------------------------------------------------- create

    def _check_namespace(self, rt: ResourceType, namespace: str, creating: bool) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise bad_request("the server could not find the requested resource: no namespace")
        ns = self.store.get(("", "namespaces"), ("", namespace))
        if ns is None:
            raise not_found("", "namespaces", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f"{rt.kind.lower()} is forbidden: unable to create new content in namespace "
                f"{namespace} because it is being terminated",
                kind=rt.plural,
            )

    def _validate_meta(self, rt: ResourceType, obj: dict[str, Any]) -> builtins.list[Cause]:
        causes: list[Cause] = []
        name = obj["metadata"].get("name", "")
        label_only = rt.plural in ("namespaces", "services") and rt.group == ""
        check = names.is_dns1123_label if label_only else names.is_dns1123_subdomain
        # RBAC objects and CRDs have path-segment names (e.g. "system:foo"), not DNS ones.
        # APIServices are `version.group` path segments, checked by their strategy.
        path_segment = rt.plural in ("customresourcedefinitions", "apiservices")
        if rt.group != "rbac.authorization.k8s.io" and not path_segment:
            causes += [fe.invalid("metadata.name", name, msg) for msg in check(name)]
        annotations = obj["metadata"].get("annotations") or {}
        total = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
        if total > 262144:  # kube-apiserver's TotalAnnotationSizeLimitB
            causes.append(fe.too_long("metadata.annotations", 262144))
        for key, value in (obj["metadata"].get("labels") or {}).items():
            if not isinstance(value, str):
                causes.append(
                    Cause("FieldValueInvalid", "label values must be strings", "metadata.labels")
                )
            elif len(value) > names.LABEL_VALUE_MAX_LENGTH:
                causes.append(
                    fe.invalid(
                        f"metadata.labels[{key}]",
                        value,
                        names.max_len_error(names.LABEL_VALUE_MAX_LENGTH),
                    )
                )
        return causes

    def _validate(
        self,
        rt: ResourceType,
        strategy: Strategy,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> builtins.list[Cause]:
        causes = self._validate_meta(rt, obj) + strategy.validate(rt, obj, old)
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

    async def _off_loop(
        self, req: Request, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """`fn(*args)`, in a worker thread when the request is large (OFF_LOOP_BYTES)."""
        if req.body_bytes >= OFF_LOOP_BYTES:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

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
        if rt.storage is not None:
            self._check_kind(rt, dict(body))
            rt, body = self._stored(rt), eventsapi.to_core(body)
        obj = _copy_meta(body)
        self._check_kind(rt, obj)
        meta = obj["metadata"]
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            namespace = namespace or body_ns or ""
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
            namespace = ""
        self._check_namespace(rt, namespace, creating=True)
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise invalid(
                    rt.group,
                    rt.kind,
                    "",
                    [fe.required("metadata.name", "name or generateName is required")],
                )
            meta["name"] = prefix + "".join(secrets.choice(_SUFFIX_CHARS) for _ in range(5))
        for server_field in (
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(server_field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if tracks_generation(rt):
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        strategy = self._strategy(rt)
        obj = strategy.prepare_for_create(rt, obj)
        obj = await self._off_loop(req, self._run_hooks, rt, obj, None, req)
        attrs = AdmissionAttributes(rt, "", namespace, meta["name"], "CREATE", req)
        if self.admission is not None:
            mutated = await self.admission.mutate(attrs, obj, None)
            if mutated is not obj:  # a webhook patched it: prune and default the result
                obj = await self._off_loop(req, self._run_hooks, rt, mutated, None, req)
        causes = await self._off_loop(req, self._validate, rt, strategy, obj, None)
        if causes:
            raise invalid(rt.group, rt.kind, obj["metadata"]["name"], causes)
        if self.admission is not None:
            await self.admission.validate(attrs, obj, None)
        if not applied:  # an apply already recorded its manager's Apply entry
            obj = await self._off_loop(req, self._managed, obj, None, req, "Update", rt)
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
            self._check_namespace(rt, namespace, creating=True)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now or now_rfc3339()
        else:
            old_meta = old["metadata"]
            meta["uid"] = old_meta["uid"]
            meta["creationTimestamp"] = old_meta.get("creationTimestamp")
        obj["apiVersion"] = rt.group_version
        obj["kind"] = rt.kind
        return self._commit(rt, obj, old)

    def _check_kind(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        for name, value in (("apiVersion", api_version), ("kind", kind)):
            if value is not None and not isinstance(value, str):
                # kube-apiserver reads the type meta with Go's json before anything else
                raise bad_request(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal "
                    f"{go_json_type(value)} into Go struct field .{name} of type string"
                )
        if kind and kind != rt.kind:
            raise bad_request(
                f"the kind of the object ({kind}) does not match the resource ({rt.kind})"
            )
        if api_version and api_version.rpartition("/")[0] != rt.group:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.group_version})"
            )
        obj["apiVersion"] = rt.group_version
        obj["kind"] = rt.kind

    def _managed(
        self,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        req: Request,
        operation: str,
        rt: ResourceType,
        subresource: str = "",
    ) -> dict[str, Any]:
        if req.user.get("username") == SYSTEM_USER["username"]:
            # The simulated in-process controllers (job controller, kubelet, scheduler, GC)
            # do not record managedFields: computing them dominated the cost of their
            # status writes, and no client relies on those entries.
            return obj
        manager = req.field_manager or "unknown"
        try:
            return patching.update_managed_fields(
                old,
                obj,
                manager,
                operation,
                now_rfc3339(),
                subresource=subresource,
                schema=self._patch_schema(rt),
            )
        except Exception:  # managedFields are bookkeeping: never fail a write over them
            return obj

    def _commit(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        rv = self.store.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        self.store.put(rt.key, obj, rv)
        for hook in self.hooks:
            hook.after_write(rt, obj, old)
        return obj

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
        if rt.storage is not None:
            self._check_kind(rt, dict(body))
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
        if want_rv and want_rv != old["metadata"]["resourceVersion"]:
            raise conflict(
                rt.group,
                rt.plural,
                name,
                "the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        obj = _copy_meta(body)
        self._check_kind(rt, obj)
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
        node = ((binding or {}).get("target") or {}).get("name")
        if not node:
            raise bad_request("binding target name is required")
        pod = self.get(rt, namespace, name)
        want_uid = ((binding or {}).get("metadata") or {}).get("uid")
        if want_uid and want_uid != pod["metadata"].get("uid"):
            raise conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {want_uid}, "
                f"UID in object meta: {pod['metadata'].get('uid', '')}",
            )
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                f'already assigned to node "{assigned}"',
            )
        bound = _copy_meta({**pod, "spec": {**pod["spec"], "nodeName": str(node)}})
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
        obj = _carry_over(rt, old, obj, subresource)
        strategy = self._strategy(rt)
        obj = strategy.prepare_for_update(rt, obj, old, subresource)
        if tracks_generation(rt):
            obj["metadata"]["generation"] = old_meta.get("generation", 1)
            if subresource != "status" and _content(obj) != _content(old):
                obj["metadata"]["generation"] = old_meta.get("generation", 1) + 1
        else:
            obj["metadata"].pop("generation", None)
        obj = await self._off_loop(req, self._run_hooks, rt, obj, old, req)
        attrs = AdmissionAttributes(rt, subresource, namespace, name, "UPDATE", req)
        admission = self.admission if admit else None
        if admission is not None:
            mutated = await admission.mutate(attrs, obj, old)
            if mutated is not obj:  # a webhook patched it: prune and default the result
                obj = await self._off_loop(req, self._run_hooks, rt, mutated, old, req)
        causes = await self._off_loop(req, self._validate, rt, strategy, obj, old)
        if causes:
            raise invalid(rt.group, rt.kind, name, causes)
        if admission is not None:
            await admission.validate(attrs, obj, old)
        if operation != "Apply":
            # The diff of a large object runs off the loop,
            # before the version check: from the check to the commit nothing awaits.
            obj = await self._off_loop(req, self._managed, obj, old, req, "Update", rt, subresource)
        current = self.store.get(rt.key, (namespace, name))
        if current is None:
            raise not_found(rt.group, rt.plural, name)
        if current["metadata"]["resourceVersion"] != old_meta["resourceVersion"]:
            raise conflict(
                rt.group,
                rt.plural,
                name,
                "the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        if _same_object(obj, old):
            return old  # no-op writes do not bump resourceVersion, as in Kubernetes
        if req.dry_run:
            return obj
        if obj["metadata"].get("deletionTimestamp") and not self._deletion_blocked(rt, obj):
            return self._remove(rt, obj)
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
            if content_type in (APPLY_PATCH, APPLY_PATCH_CBOR):
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"server-side apply of {rt.qualified} is not supported by the simulated "
                    "API server: apply the core/v1 object instead",
                )
            view, rt = rt, self._stored(rt)
        for _attempt in range(8):
            old = self.store.get(rt.key, (namespace, name))
            if content_type in (APPLY_PATCH, APPLY_PATCH_CBOR):
                if old is None:
                    return await self._apply_create(rt, namespace, name, body, req, subresource)
                patched = self._apply_to(rt, name, old, body, req, subresource)
                operation = "Apply"
            else:
                if old is None:
                    raise not_found(rt.group, rt.plural, name)
                if view is not None:  # patch what the client sees, store what it becomes
                    shown = eventsapi.to_events_v1(old)
                    patched = eventsapi.to_core(self._apply_patch(view, shown, content_type, body))
                else:
                    patched = self._apply_patch(rt, old, content_type, body)
                operation = "Update"
            want_rv = (patched.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                raise conflict(
                    rt.group,
                    rt.plural,
                    name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again",
                )
            obj = _copy_meta(patched)
            self._check_kind(rt, obj)
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

    def _check_apply(self, body: Any, req: Request) -> dict[str, Any]:
        if not req.field_manager:
            raise bad_request("PATCH requests with apply content types require a fieldManager")
        if not isinstance(body, dict):
            raise bad_request("apply patch must be an object")
        return body

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
        body = self._check_apply(body, req)
        if subresource:
            raise not_found(rt.group, rt.plural, name)
        applied = patching.server_side_apply(
            None,
            body,
            req.field_manager,
            self._patch_schema(rt),
            force=req.force,
            now=now_rfc3339(),
            ignore=self._apply_ignores(rt, ""),
        )
        meta = applied.setdefault("metadata", {})
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = namespace
        return await self.create(rt, namespace, applied, req, applied=True)

    def _apply_to(
        self,
        rt: ResourceType,
        name: str,
        old: dict[str, Any],
        body: Any,
        req: Request,
        subresource: str,
    ) -> dict[str, Any]:
        """Server-side apply of `body` to the stored `old`; a conflict is kube-apiserver's 409."""
        body = self._check_apply(body, req)
        try:
            return patching.server_side_apply(
                old,
                body,
                req.field_manager,
                self._patch_schema(rt),
                force=req.force,
                now=now_rfc3339(),
                subresource=subresource,
                ignore=self._apply_ignores(rt, subresource),
            )
        except patching.ConflictError as exc:
            raise self._apply_conflict(rt, name, exc) from None

    def _apply_ignores(self, rt: ResourceType, subresource: str) -> tuple[str, ...]:
        """The main resource of a type with a status subresource does not own `.status`."""
        return ("status",) if rt.has_status_subresource and subresource != "status" else ()

    def _patch_schema(self, rt: ResourceType) -> patching.PatchSchema:
        if rt.crd is not None:
            schema = rt.crd.get("schema") or {}
            return patching.crd_patch_schema(schema)
        return patching.builtin_patch_schema(rt.group, rt.kind)

    def _apply_conflict(self, rt: ResourceType, name: str, exc: patching.ConflictError) -> ApiError:
        causes = [Cause(c["reason"], c["message"], c.get("field", "")) for c in exc.status_causes()]
        return ApiError(
            409,
            "Conflict",
            str(exc),
            group=rt.group,
            kind=rt.plural,
            name=name,
            causes=causes,
        )

    def _apply_patch(
        self, rt: ResourceType, old: dict[str, Any], content_type: str, body: Any
    ) -> dict[str, Any]:
        try:
            if content_type == JSON_PATCH:
                if not isinstance(body, list):
                    raise bad_request("json patch must be a list of operations")
                return patching.apply_json_patch(old, body)
            if content_type == MERGE_PATCH:
                if not isinstance(body, dict):
                    raise bad_request("merge patch must be a JSON object")
                return patching.apply_merge_patch(old, body)
            if content_type == STRATEGIC_PATCH:
                if rt.crd is not None:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        f"the body of the request was in an unknown format - accepted media "
                        f"types include: {JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}",
                    )
                if not isinstance(body, dict):
                    raise bad_request("strategic merge patch must be a JSON object")
                return patching.apply_strategic_merge_patch(
                    old, body, patching.builtin_patch_schema(rt.group, rt.kind)
                )
        except patching.PatchError as exc:
            raise ApiError(422, "Invalid", str(exc)) from None
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}, {STRATEGIC_PATCH}",
        )

    # ----------------------------------------------------------------- delete

    def _deletion_blocked(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        return deletion.deletion_blocked(rt, obj, self.graceful_pod_deletion)

    async def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        req: Request | None = None,
    ) -> dict[str, Any]:
        """Delete (`deletion.py` decides what that does to the object): removed at once, or
        marked with a deletionTimestamp while finalizers or a pod's grace period hold it."""
        req = req or Request()
        options = options or {}
        namespace = namespace if rt.namespaced else ""
        obj = self.store.get(rt.key, (namespace, name))
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        deletion.check_preconditions(rt, name, obj, options)
        policy = deletion.propagation_policy(rt, name, options)
        if self.admission is not None:
            attrs = AdmissionAttributes(rt, "", namespace, name, "DELETE", req, options)
            await self.admission.validate(attrs, None, obj)
        if req.dry_run:
            return obj
        has_dependents = bool(self.store.dependents.get(obj["metadata"].get("uid", "")))
        new = deletion.mark_deleted(
            rt,
            obj,
            policy,
            has_dependents,
            options.get("gracePeriodSeconds"),
            self.graceful_pod_deletion,
        )
        if self._deletion_blocked(rt, new):
            if new == obj:
                return obj
            return self._commit(rt, new, obj)
        return self._remove(rt, new)

    def _remove(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        rv = self.store.next_rv()
        obj = _copy_meta(obj)
        obj["metadata"]["resourceVersion"] = str(rv)
        self.store.remove(rt.key, obj, rv)
        for hook in self.hooks:
            hook.after_write(rt, None, obj)
        return obj

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        options: dict[str, Any] | None = None,
        req: Request | None = None,
    ) -> builtins.list[dict[str, Any]]:
        result = self.list(rt, namespace, labels, fields)
        deleted = []
        for obj in result.items:
            meta = obj["metadata"]
            try:
                deleted.append(
                    await self.delete(rt, meta.get("namespace", ""), meta["name"], options, req)
                )
            except ApiError as err:
                if err.code != 404:
                    raise
        return deleted

    def force_remove(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Remove at once, whatever the finalizers: for a kubelet ending a pod's grace period."""
        if self.store.get(rt.key, (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])):
            self._remove(rt, obj)


def _carry_over(
    rt: ResourceType, old: dict[str, Any], obj: dict[str, Any], subresource: str
) -> dict[str, Any]:
    """`obj` as an update of `old` may write it: the fields the server owns kept from `old`,
    and only `.status` from a status write (or everything but `.status` otherwise)."""
    meta = obj["metadata"]
    old_meta = old["metadata"]
    for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    meta["name"] = old_meta["name"]
    if rt.namespaced:
        meta["namespace"] = old_meta.get("namespace", "")
    else:
        meta.pop("namespace", None)
    if subresource == "status":
        # The status subresource changes .status only (and nothing of metadata but managedFields).
        new = dict(old)
        new["metadata"] = dict(old_meta)
        if "status" in obj:
            new["status"] = obj["status"]
        else:
            new.pop("status", None)
        return new
    if rt.has_status_subresource:
        if "status" in old:
            obj["status"] = old["status"]
        else:
            obj.pop("status", None)
    return obj


def go_json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"
