"""The built-in mutating admission plugins kube-apiserver runs on a pod's create, before any
webhook: ServiceAccount (the `kube-api-access-<random>` projected token volume, mounted
in every container) and Priority (`priorityClassName` -> `priority` and
`preemptionPolicy`). Pure: the caller passes the ServiceAccount and PriorityClasses."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

__all__ = [
    "SA_MOUNT_PATH",
    "SA_TOKEN_SECONDS",
    "SA_VOLUME_PREFIX",
    "PriorityRefused",
    "admit_priority",
    "admit_service_account",
    "random_suffix",
]

SA_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
SA_VOLUME_PREFIX: Final = "kube-api-access-"
SA_TOKEN_SECONDS: Final = 3607  # what kube-apiserver gives the kube-api-access token
_DEFAULT_MODE: Final = 0o644
# utilrand.String's alphabet: no vowels (no words) and no confusable characters.
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_rng = random.Random()


def random_suffix() -> str:
    """Five characters as kube-apiserver's generated names end."""
    return "".join(_rng.choice(_ALPHABET) for _ in range(5))


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume the ServiceAccount plugin adds: the token, the cluster's CA and
    the namespace."""
    return {
        "name": name,
        "projected": {
            "defaultMode": _DEFAULT_MODE,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": SA_TOKEN_SECONDS, "path": "token"}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


def _automount(spec: Mapping[str, Any], account: Mapping[str, Any] | None) -> bool:
    """The pod's `automountServiceAccountToken`, else its ServiceAccount's, else true."""
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    if account is not None and account.get("automountServiceAccountToken") is not None:
        return bool(account["automountServiceAccountToken"])
    return True


def admit_service_account(
    spec: dict[str, Any],
    account: Mapping[str, Any] | None,
    suffix: Callable[[], str] = random_suffix,
) -> None:
    """Mount the ServiceAccount token volume in every container and init container that
    mounts nothing at its path, adding the volume when one does (in place)."""
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = "default"
    if not _automount(spec, account):
        return
    volumes = list(spec.get("volumes") or [])
    taken = {str(v.get("name")) for v in volumes if isinstance(v, Mapping)}
    existing = next((n for n in taken if n.startswith(SA_VOLUME_PREFIX)), None)
    name = existing
    while name is None or (existing is None and name in taken):
        name = SA_VOLUME_PREFIX + suffix()
    mount = {"name": name, "readOnly": True, "mountPath": SA_MOUNT_PATH}
    needed = False
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for index, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            mounts = list(container.get("volumeMounts") or [])
            if any(isinstance(m, Mapping) and m.get("mountPath") == SA_MOUNT_PATH for m in mounts):
                continue
            containers[index] = {**container, "volumeMounts": [*mounts, dict(mount)]}
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, token_volume(name)]


class PriorityRefused(Exception):
    """The Priority plugin refuses the pod (a 403 Forbidden naming the pod)."""


def _default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The global default class; with several (a race), the lowest value, as upstream."""
    found = [pc for pc in classes if pc.get("globalDefault")]
    return min(found, key=lambda pc: int(pc.get("value") or 0)) if found else None


def admit_priority(spec: dict[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> None:
    """Resolve `priorityClassName` (or the global default class) to `priority` and
    `preemptionPolicy`, in place; PriorityRefused with kube-apiserver's text for a class
    that does not exist or a given priority or policy the class does not give."""
    name = spec.get("priorityClassName")
    if name:
        pc = classes.get(str(name))
        if pc is None:
            raise PriorityRefused(f"no PriorityClass with name {name} was found")
    else:
        pc = _default_class(classes.values())
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int(pc.get("value") or 0) if pc is not None else 0
    policy = str((pc or {}).get("preemptionPolicy") or "PreemptLowerPriority")
    given = spec.get("priority")
    if given is not None and given != value:
        raise PriorityRefused(
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name"
        )
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != policy:
        raise PriorityRefused(
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given "
            "PriorityClass name"
        )
    spec["priority"] = value
    spec["preemptionPolicy"] = policy
