"""The webhook configurations, Service and Secret the controller's webhooks need.

One definition, three uses: `config/webhook/*.yaml` is generated from it (a test checks the
committed files match: `python -m jobset.webhooks.manifests config/webhook`), `jobset dev`
installs it into the simulated cluster, and tests install it. Names follow upstream's
kustomize output (`jobset-` prefix, namespace `jobset-system`).

Scope and failure policy: the JobSet webhooks fail closed (`failurePolicy: Fail`): a JobSet
admitted without defaulting and validation would reach the controller malformed. The Pod
webhooks fail closed too, as upstream, but an `objectSelector` sends them only JobSet pods,
so a broken or absent controller can block its own JobSets' pods, never unrelated pods
cluster-wide: the mutating one on the `jobset.sigs.k8s.io/jobset-name` label (as upstream),
the validating one on `jobset.sigs.k8s.io/job-key`, the label exclusive placement selects
on, so that a pod that is not a JobSet's but carries that label reaches it too and is
refused (a forged job-key could steer another tenant's placement). The validating one also sees updates, but a matchCondition
passes only those that change labels: a finalizer removal by the Job controller never waits
for this controller.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import yaml

from jobset.api import constants as c

__all__ = [
    "ADDRESS_ANNOTATION",
    "manifests",
    "mutating_configuration",
    "service",
    "validating_configuration",
    "write_manifests",
]

NAMESPACE: Final = "jobset-system"
SERVICE: Final = "jobset-webhook-service"
SECRET: Final = "jobset-webhook-server-cert"
MUTATING: Final = "jobset-mutating-webhook-configuration"
VALIDATING: Final = "jobset-validating-webhook-configuration"
WEBHOOK_PORT: Final = 9443
# The metrics Service of config/manager and the chart: the internal certificate names it when
# the secure metrics server serves that certificate (webhooks/certcontroller.py).
METRICS_SERVICE: Final = "jobset-controller-manager-metrics-service"
TIMEOUT_SECONDS: Final = 10
# Where the simulated cluster dials a Service's webhooks (no cluster network there).
ADDRESS_ANNOTATION: Final = "sim.jobset.x-k8s.io/address"

_POD_SELECTOR: Final = {"matchExpressions": [{"key": c.JOBSET_NAME_KEY, "operator": "Exists"}]}
_LABELLED_POD_SELECTOR: Final = {"matchExpressions": [{"key": c.JOB_KEY, "operator": "Exists"}]}
# Updates reach the validating pod webhook only when they change labels (the placement
# labels are what it checks on update).
LABELS_CHANGED: Final = (
    "request.operation == 'CREATE' || !has(oldObject.metadata.labels) || "
    "!has(object.metadata.labels) || oldObject.metadata.labels != object.metadata.labels"
)
_LABEL_CONDITIONS: Final = [{"name": "labels-changed", "expression": LABELS_CHANGED}]


def _hook(
    name: str,
    path: str,
    group: str,
    resource: str,
    version: str,
    operations: list[str],
    namespace: str,
    service_name: str,
    object_selector: dict[str, Any] | None = None,
    match_conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {"name": service_name, "namespace": namespace, "path": path, "port": 443}
        },
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "timeoutSeconds": TIMEOUT_SECONDS,
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": [version],
                "operations": operations,
                "resources": [resource],
            }
        ],
    }
    if object_selector is not None:
        hook["objectSelector"] = object_selector
    if match_conditions is not None:
        hook["matchConditions"] = match_conditions
    return hook


def mutating_configuration(
    namespace: str = NAMESPACE, service_name: str = SERVICE
) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING, "labels": {"app.kubernetes.io/name": "jobset"}},
        "webhooks": [
            _hook(
                c.MUTATING_JOBSET_WEBHOOK_NAME,
                c.MUTATING_JOBSET_WEBHOOK_PATH,
                c.GROUP,
                c.PLURAL,
                c.VERSION,
                # UPDATE too: a re-applied manifest gets its defaults back (jobset_webhook.py)
                ["CREATE", "UPDATE"],
                namespace,
                service_name,
            ),
            _hook(
                c.MUTATING_POD_WEBHOOK_NAME,
                c.MUTATING_POD_WEBHOOK_PATH,
                "",
                "pods",
                "v1",
                ["CREATE"],
                namespace,
                service_name,
                _POD_SELECTOR,
            ),
        ],
    }


def validating_configuration(
    namespace: str = NAMESPACE, service_name: str = SERVICE
) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING, "labels": {"app.kubernetes.io/name": "jobset"}},
        "webhooks": [
            _hook(
                c.VALIDATING_JOBSET_WEBHOOK_NAME,
                c.VALIDATING_JOBSET_WEBHOOK_PATH,
                c.GROUP,
                c.PLURAL,
                c.VERSION,
                ["CREATE", "UPDATE"],
                namespace,
                service_name,
            ),
            _hook(
                c.VALIDATING_POD_WEBHOOK_NAME,
                c.VALIDATING_POD_WEBHOOK_PATH,
                "",
                "pods",
                "v1",
                ["CREATE", "UPDATE"],
                namespace,
                service_name,
                _LABELLED_POD_SELECTOR,
                _LABEL_CONDITIONS,
            ),
        ],
    }


def service(
    namespace: str = NAMESPACE,
    service_name: str = SERVICE,
    target_port: int = WEBHOOK_PORT,
    address: str | None = None,
) -> dict[str, Any]:
    """The webhook Service; `address` (host:port) adds the simulated cluster's dial hint."""
    meta: dict[str, Any] = {
        "name": service_name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/name": "jobset", "app.kubernetes.io/component": "webhook"},
    }
    if address:
        meta["annotations"] = {ADDRESS_ANNOTATION: address}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "ports": [{"port": 443, "protocol": "TCP", "targetPort": target_port}],
            "selector": {"control-plane": "controller-manager"},
        },
    }


def secret(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The (initially empty) Secret the internal cert management fills."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": namespace},
    }


def manifests(
    namespace: str = NAMESPACE, target_port: int = WEBHOOK_PORT, address: str | None = None
) -> list[dict[str, Any]]:
    """Everything to install, in a working order (Service before the configurations)."""
    return [
        service(namespace, SERVICE, target_port, address),
        mutating_configuration(namespace),
        validating_configuration(namespace),
    ]


_FILES: Final[dict[str, Callable[[], list[dict[str, Any]]]]] = {
    "manifests.yaml": lambda: [mutating_configuration(), validating_configuration()],
    "service.yaml": lambda: [service()],
    "secret.yaml": lambda: [secret()],
}
_KUSTOMIZATION: Final = (
    "# Generated by `python -m jobset.webhooks.manifests config/webhook`; do not edit.\n"
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    "resources:\n- manifests.yaml\n- service.yaml\n- secret.yaml\n"
)


def rendered_files() -> dict[str, str]:
    """The YAML files of `config/webhook/`, by name."""
    header = "# Generated from src/jobset/webhooks/manifests.py; do not edit.\n"
    out = {
        name: header + yaml.safe_dump_all(make(), sort_keys=False) for name, make in _FILES.items()
    }
    out["kustomization.yaml"] = _KUSTOMIZATION
    return out


def write_manifests(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in rendered_files().items():
        (directory / name).write_text(text)


if __name__ == "__main__":
    write_manifests(Path(sys.argv[1] if len(sys.argv) > 1 else "config/webhook"))
