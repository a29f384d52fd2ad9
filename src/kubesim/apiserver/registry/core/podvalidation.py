"""Pod specs and pod templates validated as kube-apiserver's `ValidatePodSpec` validates them.

The same rules hold for a Pod's `spec` and for every workload's `spec.template.spec` (Jobs,
and so a JobSet's child Jobs; Deployments, ReplicaSets, ReplicationControllers), with the
field path of where the spec sits. The part modelled is what a simulated cluster acts on:
container names and images, volume names and sources, the paths and keys that the
real-process kubelet turns into files, and volume mounts. Errors read as upstream's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.machinery import field as fe
from kubesim.machinery.errors import Cause
from kubesim.machinery.selectors import LabelSelector
from kubesim.machinery.volumepaths import (
    local_descending_path_errors,
    local_non_reserved_path_errors,
)
from kubeutil import names

__all__ = ["RESTART_POLICIES", "validate_pod_spec", "validate_replica_template"]

RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_FILE_MODE_MSG: Final = "must be a number between 0 and 0777 (octal), both inclusive"


def _mode(path: str, mode: Any) -> list[Cause]:
    if mode is not None and (not isinstance(mode, int) or mode < 0 or mode > 0o777):
        return [fe.invalid(path, mode, _FILE_MODE_MSG)]
    return []


def _non_reserved_path(path: str, value: str) -> list[Cause]:
    causes = [] if value else [fe.required(path)]
    return causes + [fe.invalid(path, value, m) for m in local_non_reserved_path_errors(value)]


def _key_to_paths(path: str, items: Any) -> list[Cause]:
    """`validateKeyToPath` for each of `items`."""
    causes: list[Cause] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        at = f"{path}[{i}]"
        item = item if isinstance(item, Mapping) else {}
        if not item.get("key"):
            causes.append(fe.required(f"{at}.key"))
        causes += _non_reserved_path(f"{at}.path", str(item.get("path") or ""))
        causes += _mode(f"{at}.mode", item.get("mode"))
    return causes


def _downward_items(path: str, items: Any) -> list[Cause]:
    causes: list[Cause] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        at = f"{path}[{i}]"
        item = item if isinstance(item, Mapping) else {}
        causes += _non_reserved_path(f"{at}.path", str(item.get("path") or ""))
        causes += _mode(f"{at}.mode", item.get("mode"))
    return causes


def _keyed_source(path: str, src: Mapping[str, Any], name_field: str) -> list[Cause]:
    causes: list[Cause] = []
    if not src.get(name_field):
        causes.append(fe.required(f"{path}.{name_field}"))
    causes += _mode(f"{path}.defaultMode", src.get("defaultMode"))
    return causes + _key_to_paths(f"{path}.items", src.get("items"))


def _projection(path: str, src: Mapping[str, Any]) -> list[Cause]:
    causes = _mode(f"{path}.defaultMode", src.get("defaultMode"))
    for j, source in enumerate(src.get("sources") or []):
        at = f"{path}.sources[{j}]"
        source = source if isinstance(source, Mapping) else {}
        for kind in ("secret", "configMap"):
            if isinstance(source.get(kind), Mapping):
                causes += _key_to_paths(f"{at}.{kind}.items", source[kind].get("items"))
        if isinstance(source.get("downwardAPI"), Mapping):
            causes += _downward_items(f"{at}.downwardAPI.items", source["downwardAPI"].get("items"))
        if isinstance(source.get("serviceAccountToken"), Mapping):
            token_path = str(source["serviceAccountToken"].get("path") or "")
            causes += _non_reserved_path(f"{at}.serviceAccountToken.path", token_path)
    return causes


def _volume_source(path: str, volume: Mapping[str, Any]) -> list[Cause]:
    if isinstance(volume.get("secret"), Mapping):
        return _keyed_source(f"{path}.secret", volume["secret"], "secretName")
    if isinstance(volume.get("configMap"), Mapping):
        return _keyed_source(f"{path}.configMap", volume["configMap"], "name")
    if isinstance(volume.get("downwardAPI"), Mapping):
        src = volume["downwardAPI"]
        causes = _mode(f"{path}.downwardAPI.defaultMode", src.get("defaultMode"))
        return causes + _downward_items(f"{path}.downwardAPI.items", src.get("items"))
    if isinstance(volume.get("projected"), Mapping):
        return _projection(f"{path}.projected", volume["projected"])
    return []


def _volumes(path: str, volumes: Any) -> tuple[set[str], list[Cause]]:
    """`ValidateVolumes`: the names (DNS-1123 labels, unique) and what each source writes."""
    seen: set[str] = set()
    causes: list[Cause] = []
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        at = f"{path}[{i}]"
        volume = volume if isinstance(volume, Mapping) else {}
        name = str(volume.get("name") or "")
        if not name:
            causes.append(fe.required(f"{at}.name"))
        else:
            causes += [fe.invalid(f"{at}.name", name, m) for m in names.is_dns1123_label(name)]
        if name and name in seen:
            causes.append(fe.duplicate(f"{at}.name", name))
        seen.add(name)
        causes += _volume_source(at, volume)
    return seen, causes


def _mounts(path: str, mounts: Any, volumes: set[str]) -> list[Cause]:
    """`ValidateVolumeMounts`; the sub-path errors carry the list's path, as upstream's do."""
    causes: list[Cause] = []
    points: set[str] = set()
    for i, mount in enumerate(mounts if isinstance(mounts, list) else []):
        at = f"{path}[{i}]"
        mount = mount if isinstance(mount, Mapping) else {}
        name = str(mount.get("name") or "")
        if not name:
            causes.append(fe.required(f"{at}.name"))
        if name not in volumes:
            causes.append(fe.not_found(f"{at}.name", name))
        point = str(mount.get("mountPath") or "")
        if not point:
            causes.append(fe.required(f"{at}.mountPath"))
        if point in points:
            causes.append(fe.invalid(f"{at}.mountPath", point, "must be unique"))
        points.add(point)
        sub = str(mount.get("subPath") or "")
        if sub:
            causes += [
                fe.invalid(f"{path}.subPath", sub, m) for m in local_descending_path_errors(sub)
            ]
        expr = str(mount.get("subPathExpr") or "")
        if expr:
            if sub:
                causes.append(
                    fe.invalid(
                        f"{at}.subPathExpr", expr, "subPathExpr and subPath are mutually exclusive"
                    )
                )
            causes += [
                fe.invalid(f"{path}.subPathExpr", expr, m)
                for m in local_descending_path_errors(expr)
            ]
    return causes


def _containers(
    path: str, containers: Any, volumes: set[str], taken: set[str], required: bool
) -> list[Cause]:
    """`validateContainers` / `validateInitContainers`: names unique across both lists."""
    items = containers if isinstance(containers, list) else []
    if required and not items:
        return [fe.required(path)]
    causes: list[Cause] = []
    for i, container in enumerate(items):
        at = f"{path}[{i}]"
        container = container if isinstance(container, Mapping) else {}
        name = str(container.get("name") or "")
        if not name:
            causes.append(fe.required(f"{at}.name"))
        else:
            causes += [fe.invalid(f"{at}.name", name, m) for m in names.is_dns1123_label(name)]
            if name in taken:
                causes.append(fe.duplicate(f"{at}.name", name))
            taken.add(name)
        if not container.get("image"):
            causes.append(fe.required(f"{at}.image"))
        causes += _mounts(f"{at}.volumeMounts", container.get("volumeMounts"), volumes)
    return causes


def validate_pod_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """The errors of a pod spec found at `path` (`spec`, `spec.template.spec`), in
    `ValidatePodSpec`'s order: volumes, containers, init containers, restart policy."""
    volumes, causes = _volumes(f"{path}.volumes", spec.get("volumes"))
    taken: set[str] = set()
    causes += _containers(f"{path}.containers", spec.get("containers"), volumes, taken, True)
    causes += _containers(
        f"{path}.initContainers", spec.get("initContainers"), volumes, taken, False
    )
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        causes.append(fe.not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    return causes


def _go_labels(labels: Mapping[str, Any]) -> fe.Shown:
    """A `map[string]string` as Go's `%#v` prints it (keys sorted)."""
    items = ", ".join(f"{fe.go_quote(k)}:{fe.go_quote(str(labels[k]))}" for k in sorted(labels))
    return fe.Shown("map[string]string{" + items + "}")


def validate_replica_template(spec: Mapping[str, Any], path: str = "spec.template") -> list[Cause]:
    """`ValidatePodTemplateSpecForReplicaSet` (Deployments, ReplicaSets, and with a map
    selector ReplicationControllers): the selector matches the template's labels, the pod
    spec is valid, and its restart policy is `Always` (what an unset one defaults to)."""
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return [fe.required(path)]
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector")
    causes: list[Cause] = []
    if isinstance(selector, Mapping) and selector:
        # ReplicationControllers select with a plain map, the apps types with a LabelSelector.
        plain = not ({"matchLabels", "matchExpressions"} & selector.keys())
        sel = LabelSelector.from_label_selector({"matchLabels": selector} if plain else selector)
        if not sel.empty() and not sel.matches(labels):
            causes.append(
                fe.invalid(
                    f"{path}.metadata.labels",
                    _go_labels(labels),
                    "`selector` does not match template `labels`",
                )
            )
    pod = template.get("spec") or {}
    causes += validate_pod_spec(pod, f"{path}.spec")
    policy = pod.get("restartPolicy") or "Always"
    if policy != "Always":
        causes.append(fe.not_supported(f"{path}.spec.restartPolicy", policy, ("Always",)))
    if pod.get("activeDeadlineSeconds") is not None:
        causes.append(
            fe.invalid(
                f"{path}.spec.activeDeadlineSeconds",
                pod["activeDeadlineSeconds"],
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        )
    return causes
