"""Per-type server behaviour of built-in resources: defaults on create, what an update may change.

These mirror the registry strategies of kube-apiserver for the fields clients (kubectl,
Helm, the JobSet controller) depend on; a type without special needs gets the plain
`Strategy`.
"""

from __future__ import annotations

import base64
import ipaddress
import itertools
from typing import Any

from kubesim.apiserver.apiservices import validate_apiservice
from kubesim.apiserver.poddns import validate_pod_dns
from kubesim.apiserver.podvalidation import validate_pod_spec, validate_replica_template
from kubesim.apiserver.registry.registry import ResourceType
from kubesim.machinery import field as fe
from kubesim.machinery import gobase64
from kubesim.machinery.errors import Cause, bad_request
from kubesim.machinery.volumepaths import is_config_map_key


class Strategy:
    """Defaults and validation hooks for one type; the plain one changes nothing."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.has_status_subresource and rt.crd is not None:
            obj.pop("status", None)
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        return []


def _immutable(path: str, new: Any, old: Any, what: str = "field is immutable") -> list[Cause]:
    if new != old:
        return [fe.invalid(path, fe.Shown(_short(new)), what)]
    return []


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 120 else text[:117] + "..."


class NamespaceStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
        if subresource != "finalize":
            obj["spec"] = old.get("spec", {})
        if old["metadata"].get("deletionTimestamp"):
            obj["status"] = {"phase": "Terminating"}
        return obj


class PodStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("securityContext", {})
        spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.pop("schedulingGroup", None)  # GenericWorkload off (workloads.py turns it on)
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


# Kubernetes feature gates of the simulated API server (`jobset sim --kube-feature-gates`).
MUTABLE_POD_RESOURCES_FOR_SUSPENDED_JOBS = "MutablePodResourcesForSuspendedJobs"
KUBE_FEATURE_GATES: dict[str, bool] = {
    MUTABLE_POD_RESOURCES_FOR_SUSPENDED_JOBS: False,
    # Workload-Aware Scheduling (workloads.py, controllers/scheduler/gang.py)
    "GenericWorkload": False,
    "GangScheduling": False,
    "TopologyAwareWorkloadScheduling": False,
    "WorkloadAwarePreemption": False,
}


class JobStrategy(Strategy):
    """batch/v1 Job: the generated selector and labels, defaults, and what may change.

    `mutable_pod_resources`: Kubernetes' MutablePodResourcesForSuspendedJobs (KEP-5440, alpha
    in 1.35, off by default): the containers' and init containers' `resources.requests` and
    `resources.limits` of a suspended Job that never started may change too.
    """

    def __init__(self, *, mutable_pod_resources: bool = False) -> None:
        self.mutable_pod_resources = mutable_pod_resources

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        meta = obj["metadata"]
        uid = meta["uid"]
        template = dict(spec.get("template") or {})
        tmeta = dict(template.get("metadata") or {})
        if not spec.get("manualSelector"):
            labels = {
                **(tmeta.get("labels") or {}),
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": meta["name"],
                "controller-uid": uid,
                "job-name": meta["name"],
            }
            tmeta["labels"] = labels
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        template["metadata"] = tmeta
        spec["template"] = template
        meta["labels"] = meta.get("labels") or {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": meta["name"],
            "controller-uid": uid,
            "job-name": meta["name"],
        }
        # As in Kubernetes: with neither set, both default to 1; with only parallelism
        # set, completions stays unset (a work-queue Job).
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        # With backoffLimitPerIndex the global limit defaults to "no limit", as in Kubernetes.
        spec.setdefault(
            "backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
        )
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        pod = (spec.get("template") or {}).get("spec") or {}
        causes += validate_pod_spec(pod, "spec.template.spec")
        policy = pod.get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            causes.append(
                fe.not_supported(
                    "spec.template.spec.restartPolicy", policy or "", ("OnFailure", "Never")
                )
            )
        causes.extend(validate_pod_dns(pod, "spec.template.spec"))
        if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
            causes.append(fe.required("spec.completions", "when completion mode is Indexed"))
        for fld in ("parallelism", "completions", "backoffLimit"):
            v = spec.get(fld)
            if v is not None and (not isinstance(v, int) or v < 0):
                causes.append(fe.invalid(f"spec.{fld}", v, "must be greater than or equal to 0"))
        if old is None:
            return causes
        old_spec = old.get("spec") or {}
        causes += _immutable("spec.selector", spec.get("selector"), old_spec.get("selector"))
        causes += _immutable(
            "spec.completionMode", spec.get("completionMode"), old_spec.get("completionMode")
        )
        if spec.get("completions") != old_spec.get("completions") and not (
            spec.get("completionMode") == "Indexed"
            and spec.get("completions") == spec.get("parallelism")
        ):
            causes += _immutable(
                "spec.completions", spec.get("completions"), old_spec.get("completions")
            )
        tmpl, old_tmpl = spec.get("template") or {}, old_spec.get("template") or {}
        if tmpl != old_tmpl:
            # Kubernetes lets the scheduling directives of a suspended Job that never
            # started change (the contract Kueue and JobSet rely on); nothing else.
            started = (old.get("status") or {}).get("startTime") is not None
            suspended = bool(old_spec.get("suspend"))
            if suspended and not started:
                causes += _immutable(
                    "spec.template",
                    _without_sched(tmpl, self.mutable_pod_resources),
                    _without_sched(old_tmpl, self.mutable_pod_resources),
                )
            else:
                causes += _immutable("spec.template", tmpl, old_tmpl)
        return causes


def _without_sched(tmpl: dict[str, Any], resources: bool = False) -> dict[str, Any]:
    """The pod template without what a suspended Job's template may change: the scheduling
    directives, and with `resources` the containers' requests and limits (claims stay)."""
    meta = {
        k: v for k, v in (tmpl.get("metadata") or {}).items() if k not in ("labels", "annotations")
    }
    spec = {
        k: v
        for k, v in (tmpl.get("spec") or {}).items()
        if k not in ("nodeSelector", "tolerations", "schedulingGates", "affinity")
    }
    if resources:
        for key in ("containers", "initContainers"):
            if isinstance(spec.get(key), list):
                spec[key] = [_without_requests_limits(c) for c in spec[key]]
    return {"metadata": meta, "spec": spec}


def _without_requests_limits(container: Any) -> Any:
    if not isinstance(container, dict) or not isinstance(container.get("resources"), dict):
        return container
    kept = {k: v for k, v in container["resources"].items() if k not in ("requests", "limits")}
    return {**container, "resources": kept}


class ServiceStrategy(Strategy):
    _ips = itertools.count(10)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("clusterIP") in (None, ""):
            n = next(self._ips)
            ip = str(ipaddress.IPv4Address("10.96.0.0") + n)
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        elif spec.get("clusterIP") == "None":
            spec["clusterIPs"] = ["None"]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        ports = []
        for p in spec.get("ports") or []:
            p = {"protocol": "TCP", **p}
            p.setdefault("targetPort", p.get("port"))
            ports.append(p)
        if ports:
            spec["ports"] = ports
        obj["spec"] = spec
        obj["status"] = {"loadBalancer": {}}
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        old_spec = old.get("spec") or {}
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key not in spec and key in old_spec:
                spec[key] = old_spec[key]
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        spec["ports"] = [
            {"protocol": "TCP", "targetPort": p.get("port"), **p} for p in spec.get("ports") or []
        ] or spec.get("ports", [])
        if not spec["ports"]:
            spec.pop("ports")
        obj["spec"] = spec
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        if old is None:
            return []
        return _immutable(
            "spec.clusterIPs[0]",
            (obj.get("spec") or {}).get("clusterIP"),
            (old.get("spec") or {}).get("clusterIP"),
            "may not change once set",
        )


MAX_SECRET_SIZE = 1024 * 1024  # kube-apiserver's core.MaxSecretSize, also a ConfigMap's


def _check_base64(kind: str, values: Any) -> int:
    """The decoded size of a Secret's `data` / a ConfigMap's `binaryData`; a value Go cannot
    decode fails the request as kube-apiserver's body decoding does (400, the byte offset)."""
    size = 0
    for value in (values or {}).values() if isinstance(values, dict) else ():
        try:
            size += len(gobase64.decode(str(value)))
        except gobase64.CorruptInputError as exc:
            raise bad_request(
                f'{kind} in version "v1" cannot be handled as a {kind}: {exc}'
            ) from None
    return size


def _key_causes(path: str, values: Any) -> list[Cause]:
    causes: list[Cause] = []
    for key in values if isinstance(values, dict) else ():
        causes += [fe.invalid(f"{path}[{key}]", key, m) for m in is_config_map_key(key)]
    return causes


class SecretStrategy(Strategy):
    def _fold(self, obj: dict[str, Any]) -> dict[str, Any]:
        _check_base64("Secret", obj.get("data"))
        string_data = obj.pop("stringData", None)
        if string_data:
            data = dict(obj.get("data") or {})
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")
        return obj

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return self._fold(obj)

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        return self._fold(obj)

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """`ValidateSecret`: keys are file names (`IsConfigMapKey`), 1 MiB in all."""
        causes = _key_causes("data", obj.get("data"))
        if _check_base64("Secret", obj.get("data")) > MAX_SECRET_SIZE:
            causes.append(fe.too_long("data", MAX_SECRET_SIZE))
        return causes


class ConfigMapStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        _check_base64("ConfigMap", obj.get("binaryData"))
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        _check_base64("ConfigMap", obj.get("binaryData"))
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """`ValidateConfigMap`: keys are file names, none in both `data` and `binaryData`."""
        data, binary = obj.get("data"), obj.get("binaryData")
        causes = _key_causes("data", data)
        if isinstance(data, dict) and isinstance(binary, dict):
            causes += [
                fe.invalid(f"data[{k}]", k, "duplicate of key present in binaryData")
                for k in data
                if k in binary
            ]
        return causes + _key_causes("binaryData", binary)


class DeploymentStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        spec.setdefault(
            "strategy",
            {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
        )
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        if not spec.get("selector"):
            causes.append(fe.required("spec.selector"))
        causes += validate_replica_template(spec)
        if old is not None:
            causes += _immutable(
                "spec.selector", spec.get("selector"), (old.get("spec") or {}).get("selector")
            )
        return causes


class ReplicaSetStrategy(DeploymentStrategy):
    """apps/v1 ReplicaSet: the same selector and template rules as a Deployment's."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("replicas", 1)
        obj["spec"] = spec
        obj["status"] = {"replicas": 0}
        return obj


class NodeStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        status = dict(obj.get("status") or {})
        alloc = (
            status.get("allocatable")
            or status.get("capacity")
            or {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        )
        status.setdefault("capacity", alloc)
        status.setdefault("allocatable", alloc)
        status.setdefault(
            "conditions",
            [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": obj["metadata"]["creationTimestamp"],
                    "lastTransitionTime": obj["metadata"]["creationTimestamp"],
                }
            ],
        )
        name = obj["metadata"]["name"]
        status.setdefault(
            "nodeInfo",
            {
                # Every field kubernetes_asyncio's V1NodeSystemInfo requires.
                "architecture": "amd64",
                "bootID": f"boot-{name}",
                "containerRuntimeVersion": "sim://1.0",
                "kernelVersion": "6.1.0-sim",
                "kubeProxyVersion": "v1.32.0-sim",
                "kubeletVersion": "v1.32.0-sim",
                "machineID": f"machine-{name}",
                "operatingSystem": "linux",
                "osImage": "jobset-sim",
                "systemUUID": f"uuid-{name}",
            },
        )
        obj["status"] = status
        return obj


class ReplicationControllerStrategy(Strategy):
    """core/v1 ReplicationController: the selector and the object's labels default to the
    template's labels, replicas to 1; the template follows the ReplicaSet rules."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not spec.get("selector") and labels:
            spec["selector"] = dict(labels)
        if not obj["metadata"].get("labels") and labels:
            obj["metadata"]["labels"] = dict(labels)
        spec.setdefault("replicas", 1)
        obj["spec"] = spec
        obj["status"] = {"replicas": 0}
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        if not spec.get("selector"):
            causes.append(fe.required("spec.selector"))
        replicas = spec.get("replicas")
        if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
            causes.append(
                fe.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
            )
        return causes + validate_replica_template(spec)


class APIServiceStrategy(Strategy):
    """apiregistration.k8s.io/v1 APIService: the Service port defaults to 443; status is
    written only through its subresource."""

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        if isinstance(spec.get("service"), dict):
            spec["service"] = {"port": 443, **spec["service"]}
        obj["spec"] = spec
        obj["status"] = {}
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        if subresource == "status":
            return {**obj, "spec": old.get("spec") or {}}
        spec = dict(obj.get("spec") or {})
        if isinstance(spec.get("service"), dict):
            spec["service"] = {"port": 443, **spec["service"]}
        return {**obj, "spec": spec, "status": old.get("status") or {}}

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        return validate_apiservice(obj)


_STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "namespaces"): NamespaceStrategy(),
    ("", "pods"): PodStrategy(),
    ("", "services"): ServiceStrategy(),
    ("", "secrets"): SecretStrategy(),
    ("", "configmaps"): ConfigMapStrategy(),
    ("", "nodes"): NodeStrategy(),
    ("batch", "jobs"): JobStrategy(),
    ("apps", "deployments"): DeploymentStrategy(),
    ("apps", "replicasets"): ReplicaSetStrategy(),
    ("", "replicationcontrollers"): ReplicationControllerStrategy(),
    ("apiregistration.k8s.io", "apiservices"): APIServiceStrategy(),
}
_PLAIN = Strategy()


_storage_added = False


def strategy_for(rt: ResourceType) -> Strategy:
    global _storage_added
    if not _storage_added:
        # Imported on first use: `storage` builds on `Strategy` above, so it imports this module.
        from kubesim.apiserver import storage

        _STRATEGIES.update(storage.STRATEGIES)
        _storage_added = True
    return _STRATEGIES.get(rt.key, _PLAIN)
