"""Wire-contract strings of the JobSet API (`jobset.x-k8s.io/v1alpha2`).

Every string here is read or written by something outside this process: users' YAML,
kubectl, Kueue, the upstream Go controller's pods and dashboards, the in-pod agents. They
must be spelled exactly as the upstream project spells them, so they live in one place and
nothing else in the code base writes them as literals.
"""

from __future__ import annotations

from typing import Final

# ------------------------------------------------------------------------------------------------
# API identity

GROUP: Final = "jobset.x-k8s.io"
VERSION: Final = "v1alpha2"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "JobSet"
LIST_KIND: Final = "JobSetList"
PLURAL: Final = "jobsets"
SINGULAR: Final = "jobset"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
# Upstream registers no short names and no categories for the resource.
SHORT_NAMES: Final[tuple[str, ...]] = ()

# The reserved value of spec.managedBy meaning "the built-in JobSet controller".
JOBSET_CONTROLLER_NAME: Final = "jobset.sigs.k8s.io/jobset-controller"

# ------------------------------------------------------------------------------------------------
# Labels and annotations stamped on child Jobs and their pod templates (both as label and
# annotation, with string values).

JOBSET_NAME_KEY: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID_KEY: Final = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_NAME_KEY: Final = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_KEY: Final = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS_KEY: Final = "jobset.sigs.k8s.io/global-replicas"
JOB_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-global-index"
# Hex SHA-1 of "<namespace>/<jobName>": 40 characters, so it fits a label value.
JOB_KEY: Final = "jobset.sigs.k8s.io/job-key"
# The JobSet-wide restart attempt (status.restarts) the Job was created for.
RESTART_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/restart-attempt"
# The per-Job restart attempt (RestartJob feature).
JOB_RESTART_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/job-restart-attempt"
# Execution attempts (KEP-1282, ExecutionAttemptsTracking): status.executionAttempts as the
# Job and pod-template annotation (never a label); it also grows on every resume.
EXECUTION_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/execution-attempt"
STATUS_EXECUTION_ATTEMPTS: Final = "executionAttempts"
GROUP_NAME_KEY: Final = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS_KEY: Final = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX_KEY: Final = "jobset.sigs.k8s.io/job-group-index"
# Stable network endpoint of the coordinator pod, when spec.coordinator is set.
COORDINATOR_KEY: Final = "jobset.sigs.k8s.io/coordinator"
# Pod priority recorded on pods so exclusive placement only competes within a priority.
PRIORITY_KEY: Final = "jobset.sigs.k8s.io/priority"

# Exclusive placement (annotations on the JobSet or on a ReplicatedJob's Job template).
EXCLUSIVE_KEY: Final = "alpha.jobset.sigs.k8s.io/exclusive-topology"
# A flag (any value): use the node-selector strategy instead of pod (anti-)affinities.
NODE_SELECTOR_STRATEGY_KEY: Final = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB_KEY: Final = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT_KEY: Final = "alpha.jobset.sigs.k8s.io/no-schedule"

# In-place restart (InPlaceRestart feature): written by the in-pod agent on its Pod.
IN_PLACE_RESTART_ATTEMPT_KEY: Final = "jobset.sigs.k8s.io/in-place-restart-attempt"
# Set on a JobSet to make the agent skip its barrier.
DISABLE_IN_PLACE_RESTART_KEY: Final = "jobset.sigs.k8s.io/disable-in-place-restart"
# The JobSet status fields the controller writes and the agents read.
STATUS_PREVIOUS_IN_PLACE_RESTART_ATTEMPT: Final = "previousInPlaceRestartAttempt"
STATUS_CURRENT_IN_PLACE_RESTART_ATTEMPT: Final = "currentInPlaceRestartAttempt"
# Event reasons of this project (upstream only logs these transitions).
IN_PLACE_RESTART_STARTED_REASON: Final = "InPlaceRestartStarted"
IN_PLACE_RESTART_COMPLETED_REASON: Final = "InPlaceRestartCompleted"

# Kubernetes' own keys the JobSet logic reads (owned by the Job controller, not by JobSet).
JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"

# ------------------------------------------------------------------------------------------------
# Condition types of JobSet.status.conditions

CONDITION_COMPLETED: Final = "Completed"
CONDITION_FAILED: Final = "Failed"
CONDITION_SUSPENDED: Final = "Suspended"
CONDITION_RESTARTING: Final = "RestartingJobSet"
CONDITION_STARTUP_POLICY_IN_PROGRESS: Final = "StartupPolicyInProgress"
CONDITION_STARTUP_POLICY_COMPLETED: Final = "StartupPolicyCompleted"

CONDITION_TYPES: Final[tuple[str, ...]] = (
    CONDITION_COMPLETED,
    CONDITION_FAILED,
    CONDITION_SUSPENDED,
    CONDITION_RESTARTING,
    CONDITION_STARTUP_POLICY_IN_PROGRESS,
    CONDITION_STARTUP_POLICY_COMPLETED,
)

# Values of status.terminalState.
TERMINAL_STATE_COMPLETED: Final = "Completed"
TERMINAL_STATE_FAILED: Final = "Failed"

# ------------------------------------------------------------------------------------------------
# Condition / event reasons and messages

REACHED_MAX_RESTARTS_REASON: Final = "ReachedMaxRestarts"
REACHED_MAX_RESTARTS_MESSAGE: Final = "jobset failed due to reaching max number of restarts"

FAILED_JOBS_REASON: Final = "FailedJobs"
FAILED_JOBS_MESSAGE: Final = "jobset failed due to one or more job failures"

ALL_JOBS_COMPLETED_REASON: Final = "AllJobsCompleted"
ALL_JOBS_COMPLETED_MESSAGE: Final = "jobset completed successfully"

# Event reasons whose message is the error text.
JOB_CREATION_FAILED_REASON: Final = "JobCreationFailed"
HEADLESS_SERVICE_CREATION_FAILED_REASON: Final = "HeadlessServiceCreationFailed"
PVC_CREATION_FAILED_REASON: Final = "PVCCreationFailed"
# KEP-1150: a resume carrying changed container resources was refused by the API server.
RESOURCE_PROPAGATION_FAILED_REASON: Final = "FailedResourcePropagation"

EXCLUSIVE_PLACEMENT_VIOLATION_REASON: Final = "ExclusivePlacementViolation"
EXCLUSIVE_PLACEMENT_VIOLATION_MESSAGE: Final = "Pod violated JobSet exclusive placement policy"

IN_ORDER_STARTUP_POLICY_IN_PROGRESS_REASON: Final = "InOrderStartupPolicyInProgress"
IN_ORDER_STARTUP_POLICY_IN_PROGRESS_MESSAGE: Final = "in order startup policy is in progress"
IN_ORDER_STARTUP_POLICY_COMPLETED_REASON: Final = "InOrderStartupPolicyCompleted"
IN_ORDER_STARTUP_POLICY_COMPLETED_MESSAGE: Final = "in order startup policy has completed"

# Event reason of a restart.
JOBSET_RESTART_REASON: Final = "Restarting"

# Reasons of the RestartingJobSet condition.
RESTARTING_REASON_DEFAULT_FAILURE_POLICY: Final = "DefaultFailurePolicy"
# Formatted with the failure-policy rule name: FailurePolicy_<rule>.
RESTARTING_REASON_FAILURE_POLICY_PREFIX: Final = "FailurePolicy_"
RESTARTING_REASON_JOBS_READY: Final = "JobsReady"
RESTARTING_REASON_JOBSET_FAILED: Final = "JobSetFailed"
RESTARTING_REASON_JOBSET_COMPLETED: Final = "JobSetCompleted"
RESTARTING_REASON_JOBSET_SUSPENDED: Final = "JobSetSuspended"
RESTARTING_MESSAGE_JOBS_READY: Final = "all jobs are ready"
RESTARTING_MESSAGE_JOBSET_FAILED: Final = "jobset failed"

JOBSET_SUSPENDED_REASON: Final = "SuspendedJobs"
JOBSET_SUSPENDED_MESSAGE: Final = "jobset is suspended"
JOBSET_RESUMED_REASON: Final = "ResumeJobs"
JOBSET_RESUMED_MESSAGE: Final = "jobset is resumed"

FAIL_JOBSET_ACTION_REASON: Final = "FailJobSetFailurePolicyAction"
FAIL_JOBSET_ACTION_MESSAGE: Final = "applying FailJobSet failure policy action"
RESTART_JOBSET_ACTION_REASON: Final = "RestartJobSetFailurePolicyAction"
RESTART_JOBSET_ACTION_MESSAGE: Final = "applying RestartJobSet failure policy action"
RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_REASON: Final = (
    "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
)
RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_MESSAGE: Final = (
    "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
)
RESTART_JOB_ACTION_REASON: Final = "RestartJobFailurePolicyAction"
RESTART_JOB_ACTION_MESSAGE: Final = "applying RestartJob failure policy action"
RESTART_JOB_AND_IGNORE_MAX_RESTARTS_ACTION_REASON: Final = (
    "RestartJobAndIgnoreMaxRestartsFailurePolicyAction"
)
RESTART_JOB_AND_IGNORE_MAX_RESTARTS_ACTION_MESSAGE: Final = (
    "applying RestartJobAndIgnoreMaxRestarts failure policy action"
)


def restarting_reason_for_rule(rule_name: str) -> str:
    """Reason of the RestartingJobSet condition when a named failure-policy rule restarts."""
    return f"{RESTARTING_REASON_FAILURE_POLICY_PREFIX}{rule_name}"


# ------------------------------------------------------------------------------------------------
# Enumerations of the spec

# Failure-policy actions.
FAIL_JOBSET: Final = "FailJobSet"
RESTART_JOBSET: Final = "RestartJobSet"
RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS: Final = "RestartJobSetAndIgnoreMaxRestarts"
RESTART_JOB: Final = "RestartJob"
RESTART_JOB_AND_IGNORE_MAX_RESTARTS: Final = "RestartJobAndIgnoreMaxRestarts"
FAILURE_POLICY_ACTIONS: Final[tuple[str, ...]] = (
    FAIL_JOBSET,
    RESTART_JOBSET,
    RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS,
    RESTART_JOB,
    RESTART_JOB_AND_IGNORE_MAX_RESTARTS,
)
# Actions that restart a single Job (need the RestartJob feature gate, replicas <= 1024).
JOB_RESTART_ACTIONS: Final[frozenset[str]] = frozenset(
    {RESTART_JOB, RESTART_JOB_AND_IGNORE_MAX_RESTARTS}
)

# failurePolicy.restartStrategy.
RESTART_STRATEGY_RECREATE: Final = "Recreate"
RESTART_STRATEGY_BLOCKING_RECREATE: Final = "BlockingRecreate"
RESTART_STRATEGY_IN_PLACE_RESTART: Final = "InPlaceRestart"
RESTART_STRATEGIES: Final[tuple[str, ...]] = (
    RESTART_STRATEGY_RECREATE,
    RESTART_STRATEGY_BLOCKING_RECREATE,
    RESTART_STRATEGY_IN_PLACE_RESTART,
)

# successPolicy.operator.
OPERATOR_ALL: Final = "All"
OPERATOR_ANY: Final = "Any"
OPERATORS: Final[tuple[str, ...]] = (OPERATOR_ALL, OPERATOR_ANY)

# startupPolicy.startupPolicyOrder.
STARTUP_ANY_ORDER: Final = "AnyOrder"
STARTUP_IN_ORDER: Final = "InOrder"
STARTUP_POLICY_ORDERS: Final[tuple[str, ...]] = (STARTUP_ANY_ORDER, STARTUP_IN_ORDER)

# replicatedJobs[].dependsOn[].status.
DEPENDENCY_READY: Final = "Ready"
DEPENDENCY_COMPLETE: Final = "Complete"
DEPENDS_ON_STATUSES: Final[tuple[str, ...]] = (DEPENDENCY_READY, DEPENDENCY_COMPLETE)

# volumeClaimPolicies[].retentionPolicy.whenDeleted.
RETENTION_DELETE: Final = "Delete"
RETENTION_RETAIN: Final = "Retain"
RETENTION_POLICIES: Final[tuple[str, ...]] = (RETENTION_DELETE, RETENTION_RETAIN)

DEFAULT_GROUP_NAME: Final = "default"
DEFAULT_REPLICAS: Final = 1
# Name given to unnamed failure-policy rules: failurePolicyRule<index>.
DEFAULT_RULE_NAME_PREFIX: Final = "failurePolicyRule"

# ------------------------------------------------------------------------------------------------
# batch/v1 Job values JobSet relies on

JOB_COMPLETION_MODE_INDEXED: Final = "Indexed"
JOB_COMPLETION_MODE_NON_INDEXED: Final = "NonIndexed"
POD_RESTART_POLICY_ON_FAILURE: Final = "OnFailure"
POD_REPLACEMENT_POLICY_FAILED: Final = "Failed"

# Reasons of a Job's Failed condition (the only values onJobFailureReasons accepts).
JOB_REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
JOB_REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
JOB_REASON_FAILED_INDEXES: Final = "FailedIndexes"
JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
JOB_REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
JOB_FAILURE_REASONS: Final[tuple[str, ...]] = (
    JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
    JOB_REASON_DEADLINE_EXCEEDED,
    JOB_REASON_FAILED_INDEXES,
    JOB_REASON_MAX_FAILED_INDEXES_EXCEEDED,
    JOB_REASON_POD_FAILURE_POLICY,
)

# ------------------------------------------------------------------------------------------------
# Feature gates (names as upstream's --feature-gates flag spells them) and their defaults.

FEATURE_IN_PLACE_RESTART: Final = "InPlaceRestart"
FEATURE_TLS_OPTIONS: Final = "TLSOptions"
FEATURE_RESTART_JOB: Final = "RestartJob"
FEATURE_ELASTIC_JOBSET: Final = "ElasticJobSet"
# KEP-1150 (implementable upstream, not implemented there; its name): container resources
# of a suspended JobSet's templates may change, and reach the Jobs on resume.
FEATURE_MUTABLE_POD_RESOURCES: Final = "MutablePodResourcesForSuspendedJobSets"
# KEP-1282 (alpha upstream): status.executionAttempts and the execution-attempt annotation.
FEATURE_EXECUTION_ATTEMPTS_TRACKING: Final = "ExecutionAttemptsTracking"
# This project's own gates (upstream has no such switch; names in upstream's style).
FEATURE_ELASTIC_REPLICAS: Final = "ElasticReplicas"
DEFAULT_FEATURE_GATES: Final[dict[str, bool]] = {
    FEATURE_IN_PLACE_RESTART: False,
    FEATURE_TLS_OPTIONS: True,  # GA, locked to its default
    FEATURE_RESTART_JOB: False,
    FEATURE_ELASTIC_JOBSET: False,
    FEATURE_ELASTIC_REPLICAS: False,
    FEATURE_MUTABLE_POD_RESOURCES: False,
    FEATURE_EXECUTION_ATTEMPTS_TRACKING: False,
}

# ------------------------------------------------------------------------------------------------
# Limits

# At most this many parallel child creations / deletions per reconcile.
MAX_PARALLELISM: Final = 50
# replicas ceiling when a RestartJob action is used (status jobRestarts has maxItems 1024).
MAX_REPLICAS_FOR_RESTART_JOB: Final = 1024
MAX_MANAGED_BY_LENGTH: Final = 63
MAX_VOLUME_CLAIM_NAME_LENGTH: Final = 63
MAX_INT32: Final = 2**31 - 1

# ------------------------------------------------------------------------------------------------
# Admission webhooks (paths and configuration names as upstream registers them)

MUTATING_JOBSET_WEBHOOK_PATH: Final = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
VALIDATING_JOBSET_WEBHOOK_PATH: Final = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
MUTATING_JOBSET_WEBHOOK_NAME: Final = "mjobset.kb.io"
VALIDATING_JOBSET_WEBHOOK_NAME: Final = "vjobset.kb.io"
MUTATING_POD_WEBHOOK_PATH: Final = "/mutate--v1-pod"
VALIDATING_POD_WEBHOOK_PATH: Final = "/validate--v1-pod"
MUTATING_POD_WEBHOOK_NAME: Final = "mpod.kb.io"
VALIDATING_POD_WEBHOOK_NAME: Final = "vpod.kb.io"

# Metric namespace ("subsystem") of the JobSet metrics.
METRICS_SUBSYSTEM: Final = "jobset"
