"""Server-side printing: `meta.k8s.io/v1 Table` answers for `kubectl get`, and
`PartialObjectMetadata` answers for clients that ask for metadata only.

kubectl asks for Tables and prints whatever columns the server gives, so the columns
here are what users see. Built-ins get the columns kube-apiserver prints for them;
custom resources get their CRD's `additionalPrinterColumns` (JSONPath), else Name/Age.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from kubesim.apiserver.registry.registry import ResourceType
from kubesim.clock import parse_rfc3339

Obj = dict[str, Any]
Column = tuple[str, str, int, Callable[[Obj], Any]]  # name, type, priority, cell


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def wants_metadata(accept: str) -> bool:
    """Whether the client asked for `PartialObjectMetadata` (client-go's metadata client,
    or a writer that needs only the new resourceVersion): kube-apiserver then answers any
    verb - get, list, watch, and the writes - with the objects' metadata only. The first
    media type the client lists that this server produces decides, as in kube-apiserver's
    negotiation (protobuf is not produced here: client-go lists JSON after it)."""
    for media in accept.split(","):
        if "protobuf" in media:
            continue
        return "as=PartialObjectMetadata" in media and "g=meta.k8s.io" in media
    return False


def human_age(seconds: float) -> str:
    """kubectl's duration format (5s, 3m20s, 4h, 2d3h ...)."""
    s = int(max(0, seconds))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        return f"{h // (24 * 365)}y{(h // 24) % 365}d"
    return f"{h // (24 * 365)}y"


def _age_of(stamp: str | None) -> str:
    if not stamp:
        return "<unknown>"
    try:
        return human_age(time.time() - parse_rfc3339(stamp))
    except ValueError:
        return "<invalid>"


def _age(o: Obj) -> str:
    return _age_of(o["metadata"].get("creationTimestamp"))


def _name(o: Obj) -> str:
    return str(o["metadata"]["name"])


# --------------------------------------------------------------------- JSONPath

_TOKEN = re.compile(
    r"\.([A-Za-z0-9_\-$]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]"
)


def jsonpath(obj: Any, path: str) -> list[Any]:
    """The subset of JSONPath CRD printer columns use: fields, [n], [*], [?(@.k=="v")]."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    if path.startswith("$"):
        path = path[1:]
    values = [obj]
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            return []
        pos = m.end()
        field, index, fkey, fval = m.groups()
        nxt: list[Any] = []
        for v in values:
            if field is not None:
                if isinstance(v, dict) and field in v:
                    nxt.append(v[field])
            elif index is not None:
                if isinstance(v, list):
                    if index == "*":
                        nxt.extend(v)
                    elif int(index) < len(v):
                        nxt.append(v[int(index)])
            elif isinstance(v, list):
                for item in v:
                    got = jsonpath(item, "." + fkey) if isinstance(item, dict) else []
                    if got and str(got[0]) == fval:
                        nxt.append(item)
        values = nxt
    return values


def _crd_columns(rt: ResourceType) -> list[Column]:
    version = next(
        (v for v in (rt.crd or {}).get("versions", []) if v.get("name") == rt.version), None
    )
    printer = (version or {}).get("additionalPrinterColumns")
    if printer is None:
        printer = (rt.crd or {}).get("additionalPrinterColumns")
    cols: list[Column] = [("Name", "string", 0, _name)]
    if not printer:
        cols.append(("Age", "date", 0, _age))
        return cols
    for col in printer:
        ctype = col.get("type", "string")
        path = col.get("jsonPath", "")

        def cell(o: Obj, path: str = path, ctype: str = ctype) -> Any:
            got = jsonpath(o, path)
            if not got:
                return None
            value = got[0]
            if ctype == "date" and isinstance(value, str):
                return _age_of(value)
            if isinstance(value, (dict, list)):
                import orjson

                return orjson.dumps(value).decode()
            return value

        cols.append((col["name"], ctype, int(col.get("priority", 0)), cell))
    return cols


# -------------------------------------------------------------------- built-ins


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


def _job_status(o: Obj) -> str:
    conds = {
        c.get("type"): c.get("status") for c in (o.get("status") or {}).get("conditions") or []
    }
    if conds.get("Complete") == "True":
        return "Complete"
    if conds.get("Failed") == "True":
        return "Failed"
    if conds.get("FailureTarget") == "True":
        return "FailureTarget"
    if conds.get("Suspended") == "True":
        return "Suspended"
    return "Running"


def _job_completions(o: Obj) -> str:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    completions = spec.get("completions")
    succeeded = status.get("succeeded", 0)
    if completions is None:
        return f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    return f"{succeeded}/{completions}"


def _job_duration(o: Obj) -> str:
    status = o.get("status") or {}
    start = status.get("startTime")
    if not start:
        return ""
    end = status.get("completionTime")
    stop = parse_rfc3339(end) if end else time.time()
    return human_age(stop - parse_rfc3339(start))


def _node_status(o: Obj) -> str:
    ready = next(
        (c for c in (o.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    text = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (o.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(o: Obj) -> str:
    roles = [
        k.split("/", 1)[1]
        for k in (o["metadata"].get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    ]
    return ",".join(sorted(roles)) or "<none>"


def _svc_ports(o: Obj) -> str:
    ports = (o.get("spec") or {}).get("ports") or []
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


def _cond(o: Obj, path: str) -> Any:
    got = jsonpath(o, path)
    return got[0] if got else None


def _event_object(o: Obj) -> str:
    ref = o.get("involvedObject") or o.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(o: Obj) -> str:
    stamp = o.get("lastTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    if isinstance(stamp, str) and "." in stamp:
        stamp = stamp.split(".")[0] + "Z"
    return _age_of(stamp)


def _template_containers(o: Obj, key: str) -> str:
    spec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
    return ",".join(str(c.get(key, "")) for c in spec.get("containers") or [])


def _selector_text(o: Obj) -> str:
    sel = (o.get("spec") or {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        values = ",".join(e.get("values") or [])
        op = str(e.get("operator", "")).lower()
        parts.append(f"{e.get('key')} {op} ({values})" if values else f"{e.get('key')}")
    return ",".join(parts) or "<none>"


def _apiservice_service(o: dict[str, Any]) -> str:
    ref = (o.get("spec") or {}).get("service")
    return f"{ref.get('namespace')}/{ref.get('name')}" if isinstance(ref, dict) else "Local"


def _apiservice_available(o: dict[str, Any]) -> str:
    """kubectl's AVAILABLE column: the condition's status, with the reason when not True."""
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Available":
            status = str(c.get("status"))
            return status if status == "True" else f"{status} ({c.get('reason')})"
    return "Unknown"


def _workload_wide() -> list[Column]:
    return [
        ("Containers", "string", 1, lambda o: _template_containers(o, "name")),
        ("Images", "string", 1, lambda o: _template_containers(o, "image")),
        ("Selector", "string", 1, _selector_text),
    ]


def _more(items: list[str]) -> str:
    if not items:
        return "<none>"
    shown = ",".join(items[:3])
    return shown + (f" + {len(items) - 3} more..." if len(items) > 3 else "")


def _endpoints(o: Obj) -> str:
    out = []
    for subset in o.get("subsets") or []:
        ports = subset.get("ports") or [{}]
        for addr in subset.get("addresses") or []:
            for p in ports:
                out.append(f"{addr.get('ip')}:{p['port']}" if "port" in p else str(addr.get("ip")))
    return _more(out)


def _slice_endpoints(o: Obj) -> str:
    return _more([a for e in o.get("endpoints") or [] for a in e.get("addresses") or []])


def _slice_ports(o: Obj) -> str:
    ports = [str(p.get("port")) for p in o.get("ports") or []]
    return ",".join(ports) or "<unset>"


def _int_or_na(o: Obj, key: str) -> str:
    value = (o.get("spec") or {}).get(key)
    return "N/A" if value is None else str(value)


_MODE_ABBREVIATIONS: tuple[tuple[str, str], ...] = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def _access_modes(modes: Any) -> str:
    """kubectl's access modes cell: the abbreviations in a fixed order, comma separated."""
    given = set(modes or ())
    return ",".join(short for mode, short in _MODE_ABBREVIATIONS if mode in given)


def _storage_phase(o: Obj) -> str:
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str((o.get("status") or {}).get("phase") or "")


def _vac(o: Obj) -> str:
    return str((o.get("spec") or {}).get("volumeAttributesClassName") or "<unset>")


def _volume_mode(o: Obj) -> str:
    return str((o.get("spec") or {}).get("volumeMode") or "<unset>")


def _claim_class(o: Obj) -> str:
    spec = o.get("spec") or {}
    beta = (o["metadata"].get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else spec.get("storageClassName") or "")


def _pvc_capacity(o: Obj) -> str:
    if not (o.get("spec") or {}).get("volumeName"):
        return ""
    return str(((o.get("status") or {}).get("capacity") or {}).get("storage") or "0")


def _pvc_modes(o: Obj) -> str:
    if not (o.get("spec") or {}).get("volumeName"):
        return ""
    return _access_modes((o.get("status") or {}).get("accessModes"))


def _pv_claim(o: Obj) -> str:
    ref = (o.get("spec") or {}).get("claimRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""


def _sc_name(o: Obj) -> str:
    annotations = o["metadata"].get("annotations") or {}
    default = annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
    return f"{_name(o)} (default)" if default else _name(o)


_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "persistentvolumeclaims"): [
        ("Name", "string", 0, _name),
        ("Status", "string", 0, _storage_phase),
        ("Volume", "string", 0, lambda o: (o.get("spec") or {}).get("volumeName") or ""),
        ("Capacity", "string", 0, _pvc_capacity),
        ("Access Modes", "string", 0, _pvc_modes),
        ("StorageClass", "string", 0, _claim_class),
        ("VolumeAttributesClass", "string", 0, _vac),
        ("Age", "string", 0, _age),
        ("VolumeMode", "string", 1, _volume_mode),
    ],
    ("", "persistentvolumes"): [
        ("Name", "string", 0, _name),
        (
            "Capacity",
            "string",
            0,
            lambda o: str(((o.get("spec") or {}).get("capacity") or {}).get("storage") or "0"),
        ),
        (
            "Access Modes",
            "string",
            0,
            lambda o: _access_modes((o.get("spec") or {}).get("accessModes")),
        ),
        (
            "Reclaim Policy",
            "string",
            0,
            lambda o: (o.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "",
        ),
        ("Status", "string", 0, _storage_phase),
        ("Claim", "string", 0, _pv_claim),
        ("StorageClass", "string", 0, _claim_class),
        ("VolumeAttributesClass", "string", 0, _vac),
        ("Reason", "string", 0, lambda o: (o.get("status") or {}).get("reason") or ""),
        ("Age", "string", 0, _age),
        ("VolumeMode", "string", 1, _volume_mode),
    ],
    ("storage.k8s.io", "storageclasses"): [
        ("Name", "string", 0, _sc_name),
        ("Provisioner", "string", 0, lambda o: o.get("provisioner") or ""),
        ("ReclaimPolicy", "string", 0, lambda o: o.get("reclaimPolicy") or "Delete"),
        ("VolumeBindingMode", "string", 0, lambda o: o.get("volumeBindingMode") or "Immediate"),
        ("AllowVolumeExpansion", "string", 0, lambda o: bool(o.get("allowVolumeExpansion"))),
        ("Age", "string", 0, _age),
    ],
    ("", "pods"): [
        ("Name", "string", 0, _name),
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "string", 0, _pod_restarts),
        ("Age", "string", 0, _age),
        ("IP", "string", 1, lambda o: (o.get("status") or {}).get("podIP") or "<none>"),
        ("Node", "string", 1, lambda o: (o.get("spec") or {}).get("nodeName") or "<none>"),
        (
            "Nominated Node",
            "string",
            1,
            lambda o: (o.get("status") or {}).get("nominatedNodeName") or "<none>",
        ),
        ("Readiness Gates", "string", 1, lambda o: "<none>"),
    ],
    ("batch", "jobs"): [
        ("Name", "string", 0, _name),
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        ("Duration", "string", 0, _job_duration),
        ("Age", "date", 0, _age),
        (
            "Containers",
            "string",
            1,
            lambda o: ",".join(
                c.get("name", "")
                for c in ((o.get("spec") or {}).get("template") or {})
                .get("spec", {})
                .get("containers")
                or []
            ),
        ),
        (
            "Images",
            "string",
            1,
            lambda o: ",".join(
                c.get("image", "")
                for c in ((o.get("spec") or {}).get("template") or {})
                .get("spec", {})
                .get("containers")
                or []
            ),
        ),
        (
            "Selector",
            "string",
            1,
            lambda o: ",".join(
                f"{k}={v}"
                for k, v in (
                    ((o.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
                ).items()
            ),
        ),
    ],
    ("", "nodes"): [
        ("Name", "string", 0, _name),
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        ("Age", "date", 0, _age),
        (
            "Version",
            "string",
            0,
            lambda o: ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""),
        ),
    ],
    ("", "namespaces"): [
        ("Name", "string", 0, _name),
        ("Status", "string", 0, lambda o: (o.get("status") or {}).get("phase", "")),
        ("Age", "date", 0, _age),
    ],
    ("", "services"): [
        ("Name", "string", 0, _name),
        ("Type", "string", 0, lambda o: (o.get("spec") or {}).get("type", "ClusterIP")),
        ("Cluster-IP", "string", 0, lambda o: (o.get("spec") or {}).get("clusterIP", "")),
        ("External-IP", "string", 0, lambda o: "<none>"),
        ("Port(s)", "string", 0, _svc_ports),
        ("Age", "date", 0, _age),
    ],
    ("", "configmaps"): [
        ("Name", "string", 0, _name),
        ("Data", "integer", 0, lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
        ("Age", "date", 0, _age),
    ],
    ("", "secrets"): [
        ("Name", "string", 0, _name),
        ("Type", "string", 0, lambda o: o.get("type", "Opaque")),
        ("Data", "integer", 0, lambda o: len(o.get("data") or {})),
        ("Age", "date", 0, _age),
    ],
    ("apps", "deployments"): [
        ("Name", "string", 0, _name),
        (
            "Ready",
            "string",
            0,
            lambda o: (
                f"{(o.get('status') or {}).get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 0)}"
            ),
        ),
        ("Up-to-date", "integer", 0, lambda o: (o.get("status") or {}).get("updatedReplicas", 0)),
        ("Available", "integer", 0, lambda o: (o.get("status") or {}).get("availableReplicas", 0)),
        ("Age", "date", 0, _age),
        *_workload_wide(),
    ],
    ("apiregistration.k8s.io", "apiservices"): [
        ("Name", "string", 0, _name),
        ("Service", "string", 0, _apiservice_service),
        ("Available", "string", 0, _apiservice_available),
        ("Age", "date", 0, _age),
    ],
    ("", "replicationcontrollers"): [
        ("Name", "string", 0, _name),
        ("Desired", "integer", 0, lambda o: (o.get("spec") or {}).get("replicas", 1)),
        ("Current", "integer", 0, lambda o: (o.get("status") or {}).get("replicas", 0)),
        ("Ready", "integer", 0, lambda o: (o.get("status") or {}).get("readyReplicas", 0)),
        ("Age", "date", 0, _age),
        *_workload_wide(),
    ],
    ("apps", "replicasets"): [
        ("Name", "string", 0, _name),
        ("Desired", "integer", 0, lambda o: (o.get("spec") or {}).get("replicas", 1)),
        ("Current", "integer", 0, lambda o: (o.get("status") or {}).get("replicas", 0)),
        ("Ready", "integer", 0, lambda o: (o.get("status") or {}).get("readyReplicas", 0)),
        ("Age", "date", 0, _age),
        *_workload_wide(),
    ],
    ("", "endpoints"): [
        ("Name", "string", 0, _name),
        ("Endpoints", "string", 0, _endpoints),
        ("Age", "date", 0, _age),
    ],
    ("discovery.k8s.io", "endpointslices"): [
        ("Name", "string", 0, _name),
        ("AddressType", "string", 0, lambda o: o.get("addressType", "")),
        ("Ports", "string", 0, _slice_ports),
        ("Endpoints", "string", 0, _slice_endpoints),
        ("Age", "date", 0, _age),
    ],
    ("policy", "poddisruptionbudgets"): [
        ("Name", "string", 0, _name),
        ("Min Available", "string", 0, lambda o: _int_or_na(o, "minAvailable")),
        ("Max Unavailable", "string", 0, lambda o: _int_or_na(o, "maxUnavailable")),
        (
            "Allowed Disruptions",
            "integer",
            0,
            lambda o: (o.get("status") or {}).get("disruptionsAllowed", 0),
        ),
        ("Age", "date", 0, _age),
    ],
    ("", "events"): [
        ("Last Seen", "string", 0, _event_last_seen),
        ("Type", "string", 0, lambda o: o.get("type", "")),
        ("Reason", "string", 0, lambda o: o.get("reason", "")),
        ("Object", "string", 0, _event_object),
        ("Message", "string", 0, lambda o: o.get("message") or o.get("note") or ""),
    ],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [
        ("Name", "string", 0, _name),
        ("Created At", "date", 0, lambda o: o["metadata"].get("creationTimestamp", "")),
    ],
    ("coordination.k8s.io", "leases"): [
        ("Name", "string", 0, _name),
        ("Holder", "string", 0, lambda o: (o.get("spec") or {}).get("holderIdentity", "")),
        ("Age", "date", 0, _age),
    ],
}
_BUILTIN[("events.k8s.io", "events")] = _BUILTIN[("", "events")]
_DEFAULT: list[Column] = [("Name", "string", 0, _name), ("Age", "date", 0, _age)]


def columns_for(rt: ResourceType) -> list[Column]:
    if rt.crd is not None:
        return _crd_columns(rt)
    return _BUILTIN.get(rt.key, _DEFAULT)


def partial_object_metadata(o: Obj) -> Obj:
    """`meta.k8s.io/v1 PartialObjectMetadata`: the object's metadata alone."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": o["metadata"],
    }


def partial_object_metadata_list(objs: list[Obj], list_meta: dict[str, Any]) -> Obj:
    """`meta.k8s.io/v1 PartialObjectMetadataList`: a list's items, metadata alone."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "items": [partial_object_metadata(o) for o in objs],
    }


def to_table(
    rt: ResourceType,
    objs: list[Obj],
    include_object: str,
    list_meta: dict[str, Any] | None,
    with_headers: bool = True,
) -> dict[str, Any]:
    cols = columns_for(rt)
    rows = []
    for o in objs:
        row: dict[str, Any] = {"cells": [_safe(cell, o) for _, _, _, cell in cols]}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_object_metadata(o)
        rows.append(row)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta
        or {"resourceVersion": objs[0]["metadata"].get("resourceVersion", "") if objs else ""},
        "columnDefinitions": [
            {
                "name": name,
                "type": ctype if ctype != "date" else "string",
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": prio,
            }
            for name, ctype, prio, _ in cols
        ],
        "rows": rows,
    }
    _ = with_headers  # kubectl prints headers only when they change; always sending them is safe
    return table


def _safe(cell: Callable[[Obj], Any], o: Obj) -> Any:
    try:
        return cell(o)
    except Exception:  # a malformed object must not break `kubectl get` of a whole list
        return "<error>"
