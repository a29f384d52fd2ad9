"""The JobSet API (`jobset.x-k8s.io/v1alpha2`): wire constants, typed views, defaulting and
validation. Pure functions on the JSON dicts the API server serves; no I/O, so the
controller, the webhooks, the CLI and the tests share one definition of the contract.

Names are loaded on first use: the user commands read `constants` without loading the
validation rules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobset.api import constants
    from jobset.api.constants import API_VERSION, GROUP, KIND, PLURAL, VERSION
    from jobset.api.defaulting import default_jobset, default_rule_name
    from jobset.api.types import (
        Condition,
        Coordinator,
        DependsOn,
        FailurePolicy,
        FailurePolicyRule,
        JobSet,
        JobSetSpec,
        JobSetStatus,
        Network,
        ReplicatedJob,
        ReplicatedJobStatus,
        StartupPolicy,
        SuccessPolicy,
        VolumeClaimPolicy,
        VolumeRetentionPolicy,
        as_jobset,
        condition_true,
        coordinator_endpoint,
        find_condition,
        global_job_index,
        global_replicas,
        group_job_index,
        group_name,
        group_replicas,
        headless_service_name,
        is_finished,
        is_managed_by_this_controller,
        is_suspended,
        iter_job_names,
        job_key,
        job_name,
        namespaced_job_name,
        pod_hostname,
        pvc_name,
        replicas,
        replicated_job_by_name,
        subdomain,
    )
    from jobset.api.validation import (
        ErrorType,
        FieldError,
        format_invalid_message,
        invalid_status,
        validate_create,
        validate_update,
        volume_claim_pvc_names,
    )

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "Condition",
    "Coordinator",
    "DependsOn",
    "ErrorType",
    "FailurePolicy",
    "FailurePolicyRule",
    "FieldError",
    "JobSet",
    "JobSetSpec",
    "JobSetStatus",
    "Network",
    "ReplicatedJob",
    "ReplicatedJobStatus",
    "StartupPolicy",
    "SuccessPolicy",
    "VolumeClaimPolicy",
    "VolumeRetentionPolicy",
    "as_jobset",
    "condition_true",
    "constants",
    "coordinator_endpoint",
    "default_jobset",
    "default_rule_name",
    "find_condition",
    "format_invalid_message",
    "global_job_index",
    "global_replicas",
    "group_job_index",
    "group_name",
    "group_replicas",
    "headless_service_name",
    "invalid_status",
    "is_finished",
    "is_managed_by_this_controller",
    "is_suspended",
    "iter_job_names",
    "job_key",
    "job_name",
    "namespaced_job_name",
    "pod_hostname",
    "pvc_name",
    "replicas",
    "replicated_job_by_name",
    "subdomain",
    "validate_create",
    "validate_update",
    "volume_claim_pvc_names",
]

# Where each name lives: imported on first use (PEP 562), not with the package.
_HOMES: dict[str, str] = {
    "constants": "jobset.api.constants",
    "API_VERSION": "jobset.api.constants",
    "GROUP": "jobset.api.constants",
    "KIND": "jobset.api.constants",
    "PLURAL": "jobset.api.constants",
    "VERSION": "jobset.api.constants",
    "default_jobset": "jobset.api.defaulting",
    "default_rule_name": "jobset.api.defaulting",
    "Condition": "jobset.api.types",
    "Coordinator": "jobset.api.types",
    "DependsOn": "jobset.api.types",
    "FailurePolicy": "jobset.api.types",
    "FailurePolicyRule": "jobset.api.types",
    "JobSet": "jobset.api.types",
    "JobSetSpec": "jobset.api.types",
    "JobSetStatus": "jobset.api.types",
    "Network": "jobset.api.types",
    "ReplicatedJob": "jobset.api.types",
    "ReplicatedJobStatus": "jobset.api.types",
    "StartupPolicy": "jobset.api.types",
    "SuccessPolicy": "jobset.api.types",
    "VolumeClaimPolicy": "jobset.api.types",
    "VolumeRetentionPolicy": "jobset.api.types",
    "as_jobset": "jobset.api.types",
    "condition_true": "jobset.api.types",
    "coordinator_endpoint": "jobset.api.types",
    "find_condition": "jobset.api.types",
    "global_job_index": "jobset.api.types",
    "global_replicas": "jobset.api.types",
    "group_job_index": "jobset.api.types",
    "group_name": "jobset.api.types",
    "group_replicas": "jobset.api.types",
    "headless_service_name": "jobset.api.types",
    "is_finished": "jobset.api.types",
    "is_managed_by_this_controller": "jobset.api.types",
    "is_suspended": "jobset.api.types",
    "iter_job_names": "jobset.api.types",
    "job_key": "jobset.api.types",
    "job_name": "jobset.api.types",
    "namespaced_job_name": "jobset.api.types",
    "pod_hostname": "jobset.api.types",
    "pvc_name": "jobset.api.types",
    "replicas": "jobset.api.types",
    "replicated_job_by_name": "jobset.api.types",
    "subdomain": "jobset.api.types",
    "ErrorType": "jobset.api.validation",
    "FieldError": "jobset.api.validation",
    "format_invalid_message": "jobset.api.validation",
    "invalid_status": "jobset.api.validation",
    "validate_create": "jobset.api.validation",
    "validate_update": "jobset.api.validation",
    "volume_claim_pvc_names": "jobset.api.validation",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if home == f"{__name__}.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
