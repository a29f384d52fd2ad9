"""`jobset sim --nodes SPEC`: the initial nodes of the simulated cluster, in one short string.

JobSet's placement features are about topology (one replicated job per node pool, rack or TPU
slice), so the spec is built around *domains*: each group of nodes is a grid of domains, each
domain labelled with a topology key, each node with its capacity, labels and taints. The result
is a list of ordinary Node objects; `kubectl apply` of more Nodes works the same way later.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.base.resources import DEFAULT_ALLOCATABLE
from kubesim.clock import now_rfc3339
from kubeutil.quantity import parse_quantity

__all__ = ["DEFAULT_TOPOLOGY_KEY", "MAX_NODES", "NODE_SPEC_HELP", "parse_node_spec"]

DEFAULT_TOPOLOGY_KEY: Final = "cloud.google.com/gke-nodepool"
MAX_NODES: Final = 100_000
KUBELET_VERSION: Final = "v1.32.0"

NODE_SPEC_HELP: Final = """\
--nodes SPEC describes the initial nodes: groups separated by ';', items by ','.

  SPEC   := GROUP [';' GROUP]...
  GROUP  := ITEM [',' ITEM]...         exactly one ITEM is the SHAPE (bare or pools=SHAPE)
  ITEM   := SHAPE | KEY=VALUE
  SHAPE  := N | D x N | D1 x D2 x ... x N
            N nodes per innermost domain, D domains per level; '16' is one pool of 16 nodes,
            '4x4' is 4 pools of 4 nodes, '2x4x8' is 2 zones x 4 racks x 8 nodes.

Keys (repeatable ones marked *):
  pools=SHAPE            the shape, if not given first (aliases: shape=, domains=; nodes=N)
  label=KEY *            topology label key for the next level, outermost first
                         (default for a one-level shape: cloud.google.com/gke-nodepool)
  label=KEY=VALUE *      fixed label on every node of the group (may override the defaults
                         kubernetes.io/os=linux and kubernetes.io/arch=amd64)
  prefix=NAME            node and domain name prefix (default 'pool', then 'pool1', 'pool2', ...
                         for later groups)
  cpu=Q memory=Q pods=Q ephemeral-storage=Q
                         capacity (defaults: cpu=32 memory=128Gi pods=110
                         ephemeral-storage=100Gi); Q is a Kubernetes quantity
  gpu=Q tpu=Q            shorthand for nvidia.com/gpu=Q and google.com/tpu=Q
  DOMAIN/NAME=Q          any extended resource, e.g. nvidia.com/gpu=8, example.com/fpga=2
  taint=KEY[=VALUE]:EFFECT *
                         EFFECT is NoSchedule, PreferNoSchedule or NoExecute

Names: level values are PREFIX-d0, PREFIX-d0-d1, ...; nodes are PREFIX-d0[-d1...]-node-i and
carry kubernetes.io/hostname=<name>. Capacity is reported as both status.capacity and
status.allocatable; every node starts Ready.

Examples:
  16
  4x4,gpu=8
  pools=4x4,label=cloud.google.com/gke-nodepool,cpu=32,memory=128Gi,nvidia.com/gpu=8
  2x4x4,label=topology.kubernetes.io/zone,label=cloud.google.com/gke-nodepool
  prefix=cpu,4;prefix=gpu,2x2,gpu=8,taint=nvidia.com/gpu=present:NoSchedule
  prefix=slice,4x4,tpu=4,label=cloud.google.com/gke-tpu-topology=4x4,\
label=cloud.google.com/gke-tpu-accelerator=tpu-v5-lite-podslice
"""

_RESOURCE_ALIASES: Final = {"gpu": "nvidia.com/gpu", "tpu": "google.com/tpu"}
_STANDARD_RESOURCES: Final = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})
_EFFECTS: Final = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
_NAME_PART: Final = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
_SHAPE: Final = re.compile(r"\d+(?:\s*[xX]\s*\d+)*")


@dataclass
class _Group:
    """One parsed group before it is expanded into nodes."""

    index: int
    text: str
    shape: list[int] | None = None
    topology_keys: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    prefix: str | None = None
    capacity: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)

    def fail(self, why: str) -> ValueError:
        return ValueError(f"--nodes group {self.index + 1} ({self.text!r}): {why}")


def _valid_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return bool(name) and len(name) <= 63 and _NAME_PART.fullmatch(name) is not None


def _valid_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and _NAME_PART.fullmatch(value) is not None)


def _parse_shape(group: _Group, text: str) -> list[int]:
    if not _SHAPE.fullmatch(text.strip()):
        raise group.fail(f"bad shape {text!r}: expected N, DxN or D1xD2x...xN (e.g. 4x4)")
    dims = [int(p) for p in re.split(r"\s*[xX]\s*", text.strip())]
    if any(d < 0 for d in dims):
        raise group.fail(f"bad shape {text!r}: counts must not be negative")
    return dims


def _parse_group(index: int, text: str) -> _Group:
    group = _Group(index, text.strip())
    items = [item.strip() for item in text.split(",")]
    for item in items:
        if not item:
            raise group.fail("empty item (stray ',')")
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            if not _SHAPE.fullmatch(item):
                raise group.fail(f"item {item!r} is neither a shape (N, DxN) nor KEY=VALUE")
            if group.shape is not None:
                raise group.fail(f"{item!r}: the shape is given twice")
            group.shape = _parse_shape(group, item)
            continue
        if key in ("pools", "shape", "domains", "nodes"):
            if group.shape is not None:
                raise group.fail(f"{item!r}: the shape is given twice")
            group.shape = _parse_shape(group, value)
            if key == "nodes" and len(group.shape) != 1:
                raise group.fail(f"{item!r}: nodes= takes a count; use pools=DxN for domains")
        elif key == "label":
            _parse_label(group, item, value)
        elif key == "prefix":
            if not value or len(value) > 200 or not _DNS_SUBDOMAIN.fullmatch(value):
                raise group.fail(f"{item!r}: prefix must be lower-case letters, digits and '-'")
            group.prefix = value
        elif key == "taint":
            group.taints.append(_parse_taint(group, item, value))
        else:
            _parse_resource(group, item, key, value)
    if group.shape is None:
        raise group.fail("no node count: add a shape such as 16 or 4x4 (or pools=4x4)")
    return group


def _parse_label(group: _Group, item: str, value: str) -> None:
    label_key, eq, label_value = value.partition("=")
    if not _valid_label_key(label_key):
        raise group.fail(f"{item!r}: {label_key!r} is not a valid label key")
    if eq:
        if not _valid_label_value(label_value):
            raise group.fail(f"{item!r}: {label_value!r} is not a valid label value")
        group.labels[label_key] = label_value
    else:
        if label_key in group.topology_keys:
            raise group.fail(f"{item!r}: topology key {label_key!r} given twice")
        group.topology_keys.append(label_key)


def _parse_taint(group: _Group, item: str, value: str) -> dict[str, str]:
    body, colon, effect = value.rpartition(":")
    if not colon or effect not in _EFFECTS:
        raise group.fail(
            f"{item!r}: a taint is KEY[=VALUE]:EFFECT with EFFECT one of "
            "NoSchedule, PreferNoSchedule, NoExecute"
        )
    key, _, taint_value = body.partition("=")
    if not _valid_label_key(key) or not _valid_label_value(taint_value):
        raise group.fail(f"{item!r}: invalid taint key or value")
    taint = {"key": key}
    if taint_value:
        taint["value"] = taint_value
    taint["effect"] = effect
    return taint


def _parse_resource(group: _Group, item: str, key: str, value: str) -> None:
    name = _RESOURCE_ALIASES.get(key, key)
    if name not in _STANDARD_RESOURCES and "/" not in name and not name.startswith("hugepages-"):
        raise group.fail(
            f"unknown key {key!r} in {item!r}: expected pools, nodes, label, prefix, taint, "
            "cpu, memory, pods, ephemeral-storage, gpu, tpu or an extended resource "
            "like nvidia.com/gpu"
        )
    if "/" in name and not _valid_label_key(name):
        raise group.fail(f"{item!r}: {name!r} is not a valid resource name")
    try:
        quantity = parse_quantity(value)
    except ValueError:
        raise group.fail(f"{item!r}: {value!r} is not a Kubernetes quantity") from None
    if quantity < 0:
        raise group.fail(f"{item!r}: capacity must not be negative")
    group.capacity[name] = value


def _domains(shape: list[int]) -> Iterator[tuple[int, ...]]:
    """Every path through the domain levels (all dims but the last, which counts nodes)."""
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in _domains(shape[1:]):
            yield (i, *rest)


def parse_node_spec(spec: str, *, now: str | None = None) -> list[dict[str, Any]]:
    """Parse a `--nodes` SPEC (see NODE_SPEC_HELP) into Node objects.

    Raises ValueError naming the offending group and item. An empty spec or "0" gives no nodes.
    `now` (RFC 3339) stamps the conditions; default: the current time.
    """
    if not isinstance(spec, str):
        raise ValueError(f"--nodes expects a string, got {type(spec).__name__}")
    if not spec.strip():
        return []
    stamp = now or now_rfc3339()
    texts = spec.split(";")
    groups: list[_Group] = []
    for i, text in enumerate(texts):
        if not text.strip():
            if i == len(texts) - 1 and i > 0:
                continue  # tolerate a trailing ';'
            raise ValueError(f"--nodes group {i + 1} is empty (stray ';')")
        groups.append(_parse_group(i, text))

    total = 0
    for group in groups:
        shape = group.shape or [0]
        count = 1
        for d in shape:
            count *= d
        total += count
        if total > MAX_NODES:
            raise group.fail(f"more than {MAX_NODES} nodes in total")
        levels = len(shape) - 1
        keys = group.topology_keys
        if levels == 0:  # a flat count is one domain
            if len(keys) > 1:
                raise group.fail("a flat node count takes at most one label=KEY topology key")
            group.topology_keys = keys or [DEFAULT_TOPOLOGY_KEY]
            group.shape = [1, *shape]
        elif not keys and levels == 1:
            group.topology_keys = [DEFAULT_TOPOLOGY_KEY]
        elif len(keys) != levels:
            raise group.fail(
                f"shape {'x'.join(map(str, shape))} has {levels} domain level(s) but "
                f"{len(keys)} label=KEY topology key(s) were given"
            )
        clash = set(group.topology_keys) & set(group.labels)
        if clash:
            raise group.fail(f"label {sorted(clash)[0]!r} is both a topology key and fixed")

    nodes: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for group in groups:
        prefix = group.prefix or ("pool" if group.index == 0 else f"pool{group.index}")
        shape = group.shape or [1, 0]
        for path in _domains(shape[:-1]):
            domain_labels = {
                key: "-".join([prefix, *(str(p) for p in path[: level + 1])])
                for level, key in enumerate(group.topology_keys)
            }
            base = "-".join([prefix, *(str(p) for p in path)])
            for i in range(shape[-1]):
                name = f"{base}-node-{i}"
                if name in seen:
                    raise group.fail(
                        f"node name {name!r} also made by group {seen[name] + 1}; "
                        "give the groups different prefix= values"
                    )
                if len(name) > 253:
                    raise group.fail(f"node name {name[:40]!r}... is too long")
                seen[name] = group.index
                nodes.append(_make_node(name, len(nodes), group, domain_labels, stamp))
    return nodes


def _make_node(
    name: str, ordinal: int, group: _Group, domain_labels: dict[str, str], stamp: str
) -> dict[str, Any]:
    hostname = name if len(name) <= 63 else name[:63].rstrip("-.")
    labels = {
        "kubernetes.io/hostname": hostname,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **domain_labels,
        **group.labels,
    }
    capacity = {**DEFAULT_ALLOCATABLE, **group.capacity}
    n = ordinal + 1
    ip = f"10.{128 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}"
    ident = uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.jobset-sim")
    conditions = [
        _condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                   "kubelet has sufficient memory available", stamp),
        _condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                   "kubelet has no disk pressure", stamp),
        _condition("PIDPressure", "False", "KubeletHasSufficientPID",
                   "kubelet has sufficient PID available", stamp),
        _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", stamp),
    ]  # fmt: skip
    spec: dict[str, Any] = {"providerID": f"jobset-sim://{name}"}
    if group.taints:
        spec["taints"] = [dict(t) for t in group.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "capacity": dict(capacity),
            "allocatable": dict(capacity),
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": hostname},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": ident.hex,
                "systemUUID": str(ident),
                "bootID": str(uuid.uuid5(ident, "boot")),
                "kernelVersion": "6.1.0-jobset-sim",
                "osImage": "jobset-sim simulated node",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": labels["kubernetes.io/os"],
                "architecture": labels["kubernetes.io/arch"],
            },
        },
    }


def _condition(kind: str, status: str, reason: str, message: str, stamp: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }
