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
"""

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
