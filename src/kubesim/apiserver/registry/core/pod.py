"""core/v1 Pod: defaults on create (restart policy, DNS policy, tolerations, container
defaults, QoS class), the pod spec's validation and its few mutable fields, and with the
GenericWorkload gate `spec.schedulingGroup` kept and validated."""

from __future__ import annotations

from typing import Any, Final

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.columns import Obj, age, name
from kubesim.apiserver.registry.core import podadmission
from kubesim.apiserver.registry.core.poddns import validate_pod_dns
from kubesim.apiserver.registry.core.podvalidation import validate_pod_spec
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.scheduling.fields import name_errors
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery import field as fe
from kubesim.machinery.errors import ApiError, Cause
from kubeutil import names

_PRIORITY_CLASSES: Final = ("scheduling.k8s.io", "priorityclasses")
_SERVICE_ACCOUNTS: Final = ("", "serviceaccounts")

TYPE = ResourceType(
    "",
    "v1",
    "Pod",
    "pods",
    True,
    short_names=("po",),
    subresources=frozenset(
        ("status", "binding", "log", "eviction", "exec", "attach", "portforward")
    ),
    categories=("all",),
)


class PodStrategy(Strategy):
    """Pods' defaults and validation; on create also the built-in admission plugins that run
    before webhooks (ServiceAccount, Priority: `podadmission.py`), which read the store."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store

    def _admit(self, meta: dict[str, Any], spec: dict[str, Any]) -> None:
        """The ServiceAccount and Priority plugins, with the objects they read."""
        if self.store is None:
            return
        name = str(meta.get("name") or "")
        classes = self.store.resource(_PRIORITY_CLASSES).objects
        try:
            podadmission.admit_priority(spec, {str(key[1]): pc for key, pc in classes.items()})
        except podadmission.PriorityRefused as exc:
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: {exc}',
                kind="pods",
                name=name,
            ) from None
        key = (str(meta.get("namespace") or ""), str(spec.get("serviceAccountName") or "default"))
        account = self.store.get(_SERVICE_ACCOUNTS, key)
        podadmission.admit_service_account(spec, account)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("securityContext", {})
        spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
        spec.setdefault("enableServiceLinks", True)
        spec.pop("schedulingGroup", None)  # GenericWorkload off (GroupedPodStrategy keeps it)
        tolerations = list(spec.get("tolerations") or [])
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(t.get("key") == key for t in tolerations):
                tolerations.append(
                    {
                        "key": key,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 300,
                    }
                )
        spec["tolerations"] = tolerations
        spec["containers"] = [_default_container(c) for c in spec.get("containers") or []]
        if spec.get("initContainers"):
            spec["initContainers"] = [_default_container(c) for c in spec["initContainers"]]
        self._admit(obj["metadata"], spec)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        obj["spec"] = spec
        conditions = []
        if spec.get("schedulingGates"):
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                    "lastProbeTime": None,
                    "lastTransitionTime": obj["metadata"]["creationTimestamp"],
                }
            )
        obj["status"] = {
            "phase": "Pending",
            "qosClass": _qos(spec),
            **({"conditions": conditions} if conditions else {}),
        }
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        if subresource in ("", "status"):
            return obj
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        if old is not None and spec is old.get("spec"):
            # The stored spec itself (a status write keeps it): as kube-apiserver's pod status
            # update, which validates the status only, nothing to check again.
            return []
        causes = validate_pod_spec(spec, "spec")
        causes.extend(validate_pod_dns(spec))
        if old is None:
            return causes
        old_spec = old.get("spec") or {}
        # A pod's spec is immutable but for a few fields, as in Kubernetes.
        mutable = {"activeDeadlineSeconds", "tolerations", "schedulingGates", "nodeName"}
        if old_spec.get("nodeName") and spec.get("nodeName") != old_spec.get("nodeName"):
            causes.append(fe.invalid("spec.nodeName", fe.OMIT, "pod is already bound"))
        strip = {k: v for k, v in spec.items() if k not in mutable}
        old_strip = {k: v for k, v in old_spec.items() if k not in mutable}
        strip["containers"] = [
            {k: v for k, v in c.items() if k != "image"} for c in strip.get("containers") or []
        ]
        old_strip["containers"] = [
            {k: v for k, v in c.items() if k != "image"} for c in old_strip.get("containers") or []
        ]
        if strip != old_strip:
            causes.append(
                fe.forbidden(
                    "spec",
                    "pod updates may not change fields other than "
                    "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                    "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
                    "existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be "
                    "set to 1 if it was previously negative)",
                )
            )
        gates, old_gates = spec.get("schedulingGates") or [], old_spec.get("schedulingGates") or []
        if gates and not all(g in old_gates for g in gates):
            causes.append(
                fe.forbidden(
                    "spec.schedulingGates",
                    "only deletion is allowed, but found new scheduling gate",
                )
            )
        return causes


def _default_container(c: dict[str, Any]) -> dict[str, Any]:
    c = dict(c)
    image = c.get("image", "")
    c.setdefault(
        "imagePullPolicy",
        "Always"
        if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]
        else "IfNotPresent",
    )
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    if c.get("ports"):
        c["ports"] = [{"protocol": "TCP", **p} for p in c["ports"]]
    return c


def _qos(spec: dict[str, Any]) -> str:
    containers = spec.get("containers") or []
    if not any(
        (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits")
        for c in containers
    ):
        return "BestEffort"
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        if not limits.get("cpu") or not limits.get("memory"):
            return "Burstable"
        if any(requests.get(k, limits[k]) != limits[k] for k in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def drop_scheduling_group(obj: dict[str, Any]) -> None:
    """With GenericWorkload off a pod's `spec.schedulingGroup` is dropped on create."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and "schedulingGroup" in spec:
        obj["spec"] = {k: v for k, v in spec.items() if k != "schedulingGroup"}


class GroupedPodStrategy(PodStrategy):
    """Pods with GenericWorkload on: `spec.schedulingGroup` kept and validated. Like the rest
    of a pod's spec it is immutable (PodStrategy's update check covers it)."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        group = (obj.get("spec") or {}).get("schedulingGroup")
        obj = super().prepare_for_create(rt, obj)
        if group is not None:
            obj["spec"]["schedulingGroup"] = group
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        causes = super().validate(rt, obj, old)
        group = (obj.get("spec") or {}).get("schedulingGroup")
        if group is not None:
            causes += name_errors(
                "spec.schedulingGroup.podGroupName",
                (group or {}).get("podGroupName"),
                names.is_dns1123_subdomain,
            )
        return causes


def _pod_ready(o: Obj) -> str:
    statuses = (o.get("status") or {}).get("containerStatuses") or []
    total = len((o.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(o: Obj) -> str:
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = o.get("status") or {}
    for s in status.get("containerStatuses") or []:
        state = s.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            return str(state["waiting"]["reason"])
        if "terminated" in state and state["terminated"].get(
            "reason"
        ):  # Completed, Error, OOMKilled... as kubectl prints them
            return str(state["terminated"]["reason"])
    if (o.get("spec") or {}).get("schedulingGates"):
        return "SchedulingGated"
    return str(status.get("reason") or status.get("phase") or "Unknown")


def _pod_restarts(o: Obj) -> int:
    return sum(
        int(s.get("restartCount", 0))
        for s in (o.get("status") or {}).get("containerStatuses") or []
    )


def _strategy(gates: FeatureGates, store: Store) -> Strategy:
    return GroupedPodStrategy(store) if gates.generic else PodStrategy(store)


RESOURCE = Resource(
    TYPE,
    _strategy,
    (
        ("Name", "string", 0, name),
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "string", 0, _pod_restarts),
        ("Age", "string", 0, age),
        ("IP", "string", 1, lambda o: (o.get("status") or {}).get("podIP") or "<none>"),
        ("Node", "string", 1, lambda o: (o.get("spec") or {}).get("nodeName") or "<none>"),
        (
            "Nominated Node",
            "string",
            1,
            lambda o: (o.get("status") or {}).get("nominatedNodeName") or "<none>",
        ),
        ("Readiness Gates", "string", 1, lambda o: "<none>"),
    ),
)
