"""The decisions of the Deployment and ReplicaSet controllers, as pure functions.

They follow kube-controller-manager's `pkg/controller/deployment` (and its `util` package)
and `pkg/controller/replicaset` where a user can tell the difference:

- `scaled_value`: an int-or-percent against a total (`maxSurge` rounds up, `maxUnavailable`
  rounds down, `resolve_fenceposts` turns 0/0 into 0/1).
- `template_hash`: the `pod-template-hash` of a pod template (FNV-32a, encoded with the
  alphabet of `rand.SafeEncodeString`), `equal_ignore_hash` to find a Deployment's new RS.
- `rolling_step` / `recreate_step`: one step of a rollout, as the desired `spec.replicas` of
  the ReplicaSets that change (upstream's reconcileNewReplicaSet, then
  reconcileOldReplicaSets with cleanupUnhealthyReplicas and
  scaleDownOldReplicaSetsForRollingUpdate).
- `deployment_status`: replicas / updated / ready / available / unavailable and the
  Available and Progressing conditions with upstream's reasons and messages.
- `pods_to_delete`: which pods a ReplicaSet removes first (unscheduled, pending, not ready,
  doubled up on a node, ready for less time, more restarts, newer).
- `pod_available`: Ready for at least `minReadySeconds`.

Everything takes plain dicts (or the small `RSState`) and returns plain values; the
controllers in `deployment.py` and `replicaset.py` read the store and write the API.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kubesim.clock import parse_rfc3339

HASH_LABEL: Final = "pod-template-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS: Final = "deployment.kubernetes.io/max-replicas"
RESTARTED_AT: Final = "kubectl.kubernetes.io/restartedAt"
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
# Deployment annotations never copied to its ReplicaSets (upstream's annotationsToSkip).
SKIPPED_ANNOTATIONS: Final = frozenset(
    {
        LAST_APPLIED,
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
DEFAULT_SURGE: Final = "25%"
DEFAULT_UNAVAILABLE: Final = "25%"

# Condition reasons (pkg/controller/deployment/util).
NEW_RS_CREATED: Final = "NewReplicaSetCreated"
FOUND_NEW_RS: Final = "FoundNewReplicaSet"
NEW_RS_AVAILABLE: Final = "NewReplicaSetAvailable"
RS_UPDATED: Final = "ReplicaSetUpdated"
TIMED_OUT: Final = "ProgressDeadlineExceeded"
PAUSED: Final = "DeploymentPaused"
RESUMED: Final = "DeploymentResumed"
MIN_AVAILABLE: Final = "MinimumReplicasAvailable"
MIN_UNAVAILABLE: Final = "MinimumReplicasUnavailable"

_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


class IntOrPercentError(ValueError):
    """A malformed int-or-string value (`"25"`, `"a%"`)."""


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """upstream's GetScaledValueFromIntOrPercent."""
    if isinstance(value, bool):
        raise IntOrPercentError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            pct = int(value[:-1])
        except ValueError:
            raise IntOrPercentError(
                f"invalid value for IntOrString: invalid value {value!r}"
            ) from None
        return -(-pct * total // 100) if round_up else pct * total // 100
    raise IntOrPercentError(f"invalid type: string is not a percentage: {value!r}")


def resolve_fenceposts(max_surge: Any, max_unavailable: Any, replicas: int) -> tuple[int, int]:
    """(surge, unavailable) for `replicas`: surge rounds up, unavailable down; never both 0."""
    surge = scaled_value(DEFAULT_SURGE if max_surge is None else max_surge, replicas, True)
    unavailable = scaled_value(
        DEFAULT_UNAVAILABLE if max_unavailable is None else max_unavailable, replicas, False
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def strategy_type(deployment: Mapping[str, Any]) -> str:
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    return str(strategy.get("type") or "RollingUpdate")


def replicas_of(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def fenceposts(deployment: Mapping[str, Any]) -> tuple[int, int]:
    """The Deployment's (maxSurge, maxUnavailable) as pod counts; (0, 0) for Recreate."""
    if strategy_type(deployment) != "RollingUpdate":
        return 0, 0
    spec = deployment.get("spec") or {}
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    return resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas_of(deployment)
    )


def max_unavailable(deployment: Mapping[str, Any]) -> int:
    """upstream's MaxUnavailable: 0 for Recreate or no replicas, at most the replicas."""
    replicas = replicas_of(deployment)
    if strategy_type(deployment) != "RollingUpdate" or replicas == 0:
        return 0
    return min(fenceposts(deployment)[1], replicas)


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The `pod-template-hash` of a template: FNV-32a of its canonical form (and the
    collision count), written with `rand.SafeEncodeString`'s alphabet."""
    data = orjson.dumps(_semantic(template), option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += str(collision_count).encode()
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(h))


def without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(template))
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
        if not labels:
            out["metadata"].pop("labels")
    if "metadata" in out and not out["metadata"]:
        out.pop("metadata")
    return out


def _semantic(value: Any) -> Any:
    """The value with nulls and empty maps and lists dropped: what a typed client sends back
    (`creationTimestamp: null`, `resources: {}`) equals what it read, as Go's
    Semantic.DeepEqual of typed objects has it."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """upstream's EqualIgnoreHash: templates equal but for the pod-template-hash label."""
    return bool(_semantic(without_hash(a)) == _semantic(without_hash(b)))


def revision_of(obj: Mapping[str, Any]) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def rs_annotations(
    deployment: Mapping[str, Any], revision: int, existing: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The annotations of a Deployment's new ReplicaSet: the Deployment's own (but the
    skipped ones), the revision, desired and max replicas, and the revision history when a
    ReplicaSet is reused for a new revision (a rollback)."""
    out = dict(existing or {})
    for k, v in ((deployment.get("metadata") or {}).get("annotations") or {}).items():
        if k not in SKIPPED_ANNOTATIONS:
            out[k] = v
    old = out.get(REVISION)
    if old is not None and old != str(revision):
        history = [h for h in (out.get(REVISION_HISTORY) or "").split(",") if h]
        out[REVISION_HISTORY] = ",".join([*history, old])
    out[REVISION] = str(revision)
    replicas = replicas_of(deployment)
    out[DESIRED_REPLICAS] = str(replicas)
    out[MAX_REPLICAS] = str(replicas + fenceposts(deployment)[0])
    return out


@dataclass(frozen=True)
class RSState:
    """What a rollout step needs of one ReplicaSet."""

    name: str
    replicas: int  # spec.replicas
    available: int = 0  # status.availableReplicas
    created: float = 0.0  # creationTimestamp, epoch seconds
    status_replicas: int = 0
    ready: int = 0

    @staticmethod
    def of(rs: Mapping[str, Any]) -> RSState:
        status = rs.get("status") or {}
        meta = rs.get("metadata") or {}
        try:
            created = parse_rfc3339(str(meta.get("creationTimestamp") or ""))
        except ValueError:
            created = 0.0
        return RSState(
            name=str(meta.get("name") or ""),
            replicas=replicas_of(rs),
            available=int(status.get("availableReplicas") or 0),
            created=created,
            status_replicas=int(status.get("replicas") or 0),
            ready=int(status.get("readyReplicas") or 0),
        )


def _oldest_first(olds: Sequence[RSState]) -> list[RSState]:
    return sorted(olds, key=lambda r: (r.created, r.name))


def new_rs_replicas(
    replicas: int, surge: int, new: RSState | None, olds: Sequence[RSState], rolling: bool
) -> int:
    """upstream's NewRSNewReplicas: how far the new ReplicaSet may grow now."""
    if not rolling:
        return replicas
    current = new.replicas if new else 0
    # An old ReplicaSet counts its pods until they are gone, not only its spec: the bound
    # then holds for pods, whichever ReplicaSet controller acts first.
    total = current + sum(max(o.replicas, o.status_replicas) for o in olds)
    max_total = replicas + surge
    if total >= max_total:
        return current
    return current + max(0, min(max_total - total, replicas - current))


def rolling_step(
    replicas: int, surge: int, unavailable: int, new: RSState, olds: Sequence[RSState]
) -> dict[str, int]:
    """One RollingUpdate step: ReplicaSet name -> new spec.replicas (empty when none moves).

    The new ReplicaSet grows first (to at most replicas + maxSurge pods in all); once it
    cannot, old ReplicaSets shrink: unhealthy pods first, then as many available ones as
    keep replicas - maxUnavailable available."""
    if new.replicas > replicas:
        return {new.name: replicas}
    if new.replicas < replicas:
        target = new_rs_replicas(replicas, surge, new, olds, True)
        if target != new.replicas:
            return {new.name: target}
    old_count = sum(o.replicas for o in olds)
    if old_count == 0:
        return {}
    max_unavail = 0 if replicas == 0 else min(unavailable, replicas)
    min_available = replicas - max_unavail
    all_count = old_count + new.replicas
    new_unavailable = max(new.replicas - new.available, 0)
    max_scaled_down = all_count - min_available - new_unavailable
    if max_scaled_down <= 0:
        return {}
    changes: dict[str, int] = {}
    cleaned = 0
    for o in _oldest_first(olds):
        if cleaned >= max_scaled_down:
            break
        if o.replicas == 0:
            continue
        unhealthy = o.replicas - min(o.available, o.replicas)
        if unhealthy <= 0:
            continue
        down = min(max_scaled_down - cleaned, unhealthy)
        changes[o.name] = o.replicas - down
        cleaned += down
    available = new.available + sum(o.available for o in olds)
    if available <= min_available:
        return changes
    total_down = available - min_available
    scaled = 0
    for o in _oldest_first(olds):
        if scaled >= total_down:
            break
        current = changes.get(o.name, o.replicas)
        if current == 0:
            continue
        down = min(current, total_down - scaled)
        changes[o.name] = current - down
        scaled += down
    return changes


def recreate_step(
    replicas: int, new: RSState | None, olds: Sequence[RSState], old_pods_running: bool
) -> tuple[dict[str, int], bool]:
    """One Recreate step: (changes, whether the new ReplicaSet may be created now). Every old
    ReplicaSet goes to 0 first; the new one is created and scaled once no old pod runs."""
    downs = {o.name: 0 for o in olds if o.replicas > 0}
    if downs:
        return downs, False
    if old_pods_running:
        return {}, False
    if new is None:
        return {}, True
    if new.replicas != replicas:
        return {new.name: replicas}, True
    return {}, True


def history_to_delete(olds: Sequence[Mapping[str, Any]], limit: int | None) -> list[str]:
    """Old ReplicaSets past revisionHistoryLimit (empty, not being deleted), oldest revision
    first: upstream's cleanupDeployment."""
    if limit is None:
        return []
    idle = [
        rs
        for rs in olds
        if replicas_of(rs) == 0
        and not int((rs.get("status") or {}).get("replicas") or 0)
        and not (rs.get("metadata") or {}).get("deletionTimestamp")
    ]
    excess = len(idle) - max(limit, 0)
    if excess <= 0:
        return []
    idle.sort(key=lambda r: (revision_of(r), str((r.get("metadata") or {}).get("name"))))
    return [str(rs["metadata"]["name"]) for rs in idle[:excess]]


# ---------------------------------------------------------------------------- status


def _condition(ctype: str, status: str, reason: str, message: str, now: str) -> dict[str, str]:
    return {
        "type": ctype,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def set_condition(conditions: list[dict[str, Any]], cond: dict[str, Any]) -> list[dict[str, Any]]:
    """upstream's SetDeploymentCondition: same status and reason changes nothing; same status
    keeps lastTransitionTime."""
    out = []
    for c in conditions:
        if c.get("type") != cond["type"]:
            out.append(c)
            continue
        if c.get("status") == cond["status"] and c.get("reason") == cond["reason"]:
            return conditions
        if c.get("status") == cond["status"]:
            cond = {
                **cond,
                "lastTransitionTime": c.get("lastTransitionTime") or cond["lastTransitionTime"],
            }
    out.append(cond)
    return out


def get_condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for c in status.get("conditions") or ():
        if c.get("type") == ctype:
            return c  # type: ignore[no-any-return]
    return None


def deployment_status(
    deployment: Mapping[str, Any],
    new: RSState | None,
    olds: Sequence[RSState],
    now: str,
    now_ts: float,
    *,
    new_rs_event: str = "",
) -> dict[str, Any]:
    """The Deployment's next status: counts from its ReplicaSets, then the Available and
    Progressing conditions (upstream's calculateStatus and syncRolloutStatus).
    `new_rs_event` is NEW_RS_CREATED or FOUND_NEW_RS when this sync created or first found
    the new ReplicaSet."""
    old_status = deployment.get("status") or {}
    status = _counts(deployment, new, olds)
    conditions: list[dict[str, Any]] = [dict(c) for c in old_status.get("conditions") or ()]
    conditions = set_condition(conditions, _available(deployment, status, now))
    if (deployment.get("spec") or {}).get("paused"):
        conditions = set_condition(
            conditions, _condition("Progressing", "Unknown", PAUSED, "Deployment is paused", now)
        )
    else:
        conditions = _rollout_started(conditions, new, now, new_rs_event)
        conditions = _rollout_progress(deployment, status, conditions, new, now, now_ts)
    status["conditions"] = conditions
    return status


def _counts(
    deployment: Mapping[str, Any], new: RSState | None, olds: Sequence[RSState]
) -> dict[str, Any]:
    """The replica counts of the status, summed over the Deployment's ReplicaSets."""
    meta = deployment.get("metadata") or {}
    old_status = deployment.get("status") or {}
    everything = [*olds, *([new] if new else [])]
    available = sum(r.available for r in everything)
    total_spec = sum(r.replicas for r in everything)
    status: dict[str, Any] = {
        "observedGeneration": int(meta.get("generation") or 1),
        "replicas": sum(r.status_replicas for r in everything),
        "updatedReplicas": new.status_replicas if new else 0,
        "readyReplicas": sum(r.ready for r in everything),
        "availableReplicas": available,
        "unavailableReplicas": max(total_spec - available, 0),
    }
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]
    return status


def _available(
    deployment: Mapping[str, Any], status: Mapping[str, Any], now: str
) -> dict[str, Any]:
    """The Available condition: at least replicas - maxUnavailable pods are available."""
    if status["availableReplicas"] >= replicas_of(deployment) - max_unavailable(deployment):
        return _condition(
            "Available", "True", MIN_AVAILABLE, "Deployment has minimum availability.", now
        )
    return _condition(
        "Available",
        "False",
        MIN_UNAVAILABLE,
        "Deployment does not have minimum availability.",
        now,
    )


def _progressing_condition(conditions: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == "Progressing"), None)


def _rollout_started(
    conditions: list[dict[str, Any]], new: RSState | None, now: str, new_rs_event: str
) -> list[dict[str, Any]]:
    """Progressing after a resume, or because this sync created or found the new ReplicaSet."""
    new_name = new.name if new else ""
    current = _progressing_condition(conditions)
    if current is not None and current.get("reason") == PAUSED:
        return set_condition(
            conditions,
            _condition("Progressing", "Unknown", RESUMED, "Deployment is resumed", now),
        )
    if new_rs_event == NEW_RS_CREATED:
        return set_condition(
            conditions,
            _condition(
                "Progressing", "True", NEW_RS_CREATED, f'Created new replica set "{new_name}"', now
            ),
        )
    if new_rs_event == FOUND_NEW_RS and current is None:
        return set_condition(
            conditions,
            _condition(
                "Progressing", "True", FOUND_NEW_RS, f'Found new replica set "{new_name}"', now
            ),
        )
    return conditions


def _rollout_progress(
    deployment: Mapping[str, Any],
    status: Mapping[str, Any],
    conditions: list[dict[str, Any]],
    new: RSState | None,
    now: str,
    now_ts: float,
) -> list[dict[str, Any]]:
    """Progressing while the new ReplicaSet is complete, progressing, or timed out."""
    current = _progressing_condition(conditions)
    already_complete = (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE
    )
    if already_complete or new is None:
        return conditions
    old_status = deployment.get("status") or {}
    if is_complete(deployment, status):
        return set_condition(
            conditions,
            _condition(
                "Progressing",
                "True",
                NEW_RS_AVAILABLE,
                f'ReplicaSet "{new.name}" has successfully progressed.',
                now,
            ),
        )
    if _progressing(old_status, status):
        cond = _condition(
            "Progressing", "True", RS_UPDATED, f'ReplicaSet "{new.name}" is progressing.', now
        )
        if current is not None and current.get("status") == "True":
            cond["lastTransitionTime"] = str(current.get("lastTransitionTime") or now)
        return [c for c in conditions if c.get("type") != "Progressing"] + [cond]
    if _timed_out(deployment, current, now_ts):
        return set_condition(
            conditions,
            _condition(
                "Progressing",
                "False",
                TIMED_OUT,
                f'ReplicaSet "{new.name}" has timed out progressing.',
                now,
            ),
        )
    return conditions


def is_complete(deployment: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """upstream's DeploymentComplete."""
    replicas = replicas_of(deployment)
    return bool(
        status.get("updatedReplicas", 0) == replicas
        and status.get("replicas", 0) == replicas
        and status.get("availableReplicas", 0) == replicas
        and status.get("observedGeneration", 0)
        >= int((deployment.get("metadata") or {}).get("generation") or 1)
    )


def _progressing(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old_olds = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_olds = int(new.get("replicas") or 0) - int(new.get("updatedReplicas") or 0)
    return bool(
        new.get("updatedReplicas", 0) > int(old.get("updatedReplicas") or 0)
        or new_olds < old_olds
        or new.get("readyReplicas", 0) > int(old.get("readyReplicas") or 0)
        or new.get("availableReplicas", 0) > int(old.get("availableReplicas") or 0)
    )


def _timed_out(
    deployment: Mapping[str, Any], current: Mapping[str, Any] | None, now_ts: float
) -> bool:
    if current is None or current.get("reason") == NEW_RS_AVAILABLE:
        return False
    if current.get("reason") == TIMED_OUT:
        return True
    deadline = (deployment.get("spec") or {}).get("progressDeadlineSeconds")
    if deadline is None:
        deadline = 600
    try:
        since = parse_rfc3339(str(current.get("lastUpdateTime") or ""))
    except ValueError:
        return False
    return now_ts > since + float(deadline)


def progress_deadline_left(deployment: Mapping[str, Any], now_ts: float) -> float | None:
    """Seconds until the Progressing condition would time out, for a requeue; None if it
    cannot."""
    cond = get_condition(deployment.get("status") or {}, "Progressing")
    if cond is None or cond.get("reason") in (NEW_RS_AVAILABLE, TIMED_OUT, PAUSED):
        return None
    deadline = (deployment.get("spec") or {}).get("progressDeadlineSeconds")
    try:
        since = parse_rfc3339(str(cond.get("lastUpdateTime") or ""))
    except ValueError:
        return None
    return max(since + float(600 if deadline is None else deadline) - now_ts, 0.0) + 1.0


# ---------------------------------------------------------------------------- pods


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c  # type: ignore[no-any-return]
    return None


def pod_ready(pod: Mapping[str, Any]) -> bool:
    cond = _ready_condition(pod)
    return bool(cond is not None and cond.get("status") == "True")


def ready_since(pod: Mapping[str, Any]) -> float | None:
    cond = _ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    try:
        return parse_rfc3339(str(cond.get("lastTransitionTime") or ""))
    except ValueError:
        return None


def pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now_ts: float) -> bool:
    """Ready for at least minReadySeconds (upstream's IsPodAvailable)."""
    if not pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= now_ts


def available_in(pod: Mapping[str, Any], min_ready_seconds: int, now_ts: float) -> float | None:
    """Seconds until a ready pod becomes available (None when it is not ready)."""
    since = ready_since(pod)
    if since is None:
        return None
    return max(since + min_ready_seconds - now_ts, 0.0)


def is_active(pod: Mapping[str, Any]) -> bool:
    """Counts toward a ReplicaSet: not terminal and not being deleted (FilterActivePods)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get(
        "deletionTimestamp"
    )


_PHASE_RANK: Final = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_rank(pod: Mapping[str, Any], colocated: int) -> tuple[Any, ...]:
    """Sort key: pods sorting first are deleted first (upstream's ActivePodsWithRanks)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    ready = pod_ready(pod)
    since = ready_since(pod) if ready else None
    restarts = max(
        (int(cs.get("restartCount") or 0) for cs in status.get("containerStatuses") or ()),
        default=0,
    )
    try:
        created = parse_rfc3339(str(meta.get("creationTimestamp") or ""))
    except ValueError:
        created = 0.0
    return (
        1 if spec.get("nodeName") else 0,  # unscheduled first
        _PHASE_RANK.get(str(status.get("phase") or "Pending"), 0),  # pending < unknown < running
        1 if ready else 0,  # not ready first
        -colocated,  # doubled up on a node first
        -(since or 0.0),  # ready for less time first
        -restarts,  # more restarts first
        -created,  # newer first
        str(meta.get("name") or ""),
    )


def pods_to_delete(pods: Sequence[Mapping[str, Any]], count: int) -> list[Mapping[str, Any]]:
    """The `count` active pods a ReplicaSet scaling down deletes, most expendable first."""
    if count <= 0:
        return []
    per_node: dict[str, int] = {}
    for p in pods:
        node = str((p.get("spec") or {}).get("nodeName") or "")
        if node:
            per_node[node] = per_node.get(node, 0) + 1
    ranked = sorted(
        pods,
        key=lambda p: _deletion_rank(
            p, per_node.get(str((p.get("spec") or {}).get("nodeName") or ""), 0)
        ),
    )
    return list(ranked[:count])


def replicaset_status(
    rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now_ts: float
) -> dict[str, Any]:
    """A ReplicaSet's status from its active pods (conditions are kept as they were)."""
    spec = rs.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    active = [p for p in pods if is_active(p)]
    status: dict[str, Any] = {
        "replicas": len(active),
        "fullyLabeledReplicas": sum(
            1
            for p in active
            if all(
                ((p.get("metadata") or {}).get("labels") or {}).get(k) == v
                for k, v in template_labels.items()
            )
        ),
        "readyReplicas": sum(1 for p in active if pod_ready(p)),
        "availableReplicas": sum(1 for p in active if pod_available(p, min_ready, now_ts)),
        "observedGeneration": int((rs.get("metadata") or {}).get("generation") or 1),
    }
    old = rs.get("status") or {}
    if old.get("conditions"):
        status["conditions"] = old["conditions"]
    return status
