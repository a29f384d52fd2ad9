"""Python SDK for JobSets: typed models, builders, client-side validation, an async client.

```python
from jobset.sdk import JobSetClient, pytorch

js = pytorch("train", image="my/trainer:1", nodes=4, command=["torchrun", "train.py"])
async with await JobSetClient.connect(namespace="ml") as jobsets:
    await jobsets.create(js)
    done = await jobsets.wait_until_finished("train", timeout=3600)
```

Models round-trip the wire form exactly (`JobSet.from_dict(d).to_dict() == d`), so
objects read from the cluster can be changed and written back without losing fields.

Names are loaded on first use: `from jobset.sdk import JobSet` does not load the client
(aiohttp, kubernetes_asyncio) or the builders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeutil.lazy import lazy_exports

if TYPE_CHECKING:
    from jobset.sdk.builders import (
        GKE_NODEPOOL,
        JobSetBuilder,
        container,
        jax,
        leader_workers,
        multislice,
        pytorch,
        replicated_job,
    )
    from jobset.sdk.client import (
        FINISHED,
        JOBSETS,
        JobSetClient,
        JobSetDeleted,
        JobSetFailed,
        WaitTimeout,
        WatchEvent,
    )
    from jobset.sdk.models import (
        Condition,
        Container,
        Coordinator,
        DependsOn,
        EnvVar,
        FailurePolicy,
        FailurePolicyRule,
        JobSet,
        JobSetSpec,
        JobSetStatus,
        JobSpec,
        JobTemplateSpec,
        Network,
        ObjectMeta,
        PodSpec,
        PodTemplateSpec,
        ReplicatedJob,
        ReplicatedJobStatus,
        StartupPolicy,
        SuccessPolicy,
        VolumeClaimPolicy,
        VolumeRetentionPolicy,
        dump_all,
        load_all,
    )
    from jobset.sdk.validation import ValidationError, check, validate

__all__ = [
    "FINISHED",
    "GKE_NODEPOOL",
    "JOBSETS",
    "Condition",
    "Container",
    "Coordinator",
    "DependsOn",
    "EnvVar",
    "FailurePolicy",
    "FailurePolicyRule",
    "JobSet",
    "JobSetBuilder",
    "JobSetClient",
    "JobSetDeleted",
    "JobSetFailed",
    "JobSetSpec",
    "JobSetStatus",
    "JobSpec",
    "JobTemplateSpec",
    "Network",
    "ObjectMeta",
    "PodSpec",
    "PodTemplateSpec",
    "ReplicatedJob",
    "ReplicatedJobStatus",
    "StartupPolicy",
    "SuccessPolicy",
    "ValidationError",
    "VolumeClaimPolicy",
    "VolumeRetentionPolicy",
    "WaitTimeout",
    "WatchEvent",
    "check",
    "container",
    "dump_all",
    "jax",
    "leader_workers",
    "load_all",
    "multislice",
    "pytorch",
    "replicated_job",
    "validate",
]

# Where each name lives: imported on first use (PEP 562), not with the package.
_HOMES: dict[str, str] = {
    "GKE_NODEPOOL": "jobset.sdk.builders",
    "JobSetBuilder": "jobset.sdk.builders",
    "container": "jobset.sdk.builders",
    "jax": "jobset.sdk.builders",
    "leader_workers": "jobset.sdk.builders",
    "multislice": "jobset.sdk.builders",
    "pytorch": "jobset.sdk.builders",
    "replicated_job": "jobset.sdk.builders",
    "FINISHED": "jobset.sdk.client",
    "JOBSETS": "jobset.sdk.client",
    "JobSetClient": "jobset.sdk.client",
    "JobSetDeleted": "jobset.sdk.client",
    "JobSetFailed": "jobset.sdk.client",
    "WaitTimeout": "jobset.sdk.client",
    "WatchEvent": "jobset.sdk.client",
    "Condition": "jobset.sdk.models",
    "Container": "jobset.sdk.models",
    "Coordinator": "jobset.sdk.models",
    "DependsOn": "jobset.sdk.models",
    "EnvVar": "jobset.sdk.models",
    "FailurePolicy": "jobset.sdk.models",
    "FailurePolicyRule": "jobset.sdk.models",
    "JobSet": "jobset.sdk.models",
    "JobSetSpec": "jobset.sdk.models",
    "JobSetStatus": "jobset.sdk.models",
    "JobSpec": "jobset.sdk.models",
    "JobTemplateSpec": "jobset.sdk.models",
    "Network": "jobset.sdk.models",
    "ObjectMeta": "jobset.sdk.models",
    "PodSpec": "jobset.sdk.models",
    "PodTemplateSpec": "jobset.sdk.models",
    "ReplicatedJob": "jobset.sdk.models",
    "ReplicatedJobStatus": "jobset.sdk.models",
    "StartupPolicy": "jobset.sdk.models",
    "SuccessPolicy": "jobset.sdk.models",
    "VolumeClaimPolicy": "jobset.sdk.models",
    "VolumeRetentionPolicy": "jobset.sdk.models",
    "dump_all": "jobset.sdk.models",
    "load_all": "jobset.sdk.models",
    "ValidationError": "jobset.sdk.validation",
    "check": "jobset.sdk.validation",
    "validate": "jobset.sdk.validation",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
