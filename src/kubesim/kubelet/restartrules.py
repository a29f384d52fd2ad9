"""What the kubelet does when a container exits: restart it, restart every container of the
pod in place, or leave it terminated.

Kubernetes decides per container, in this order (KEP-5307 container restart rules and
KEP-5532 `RestartAllContainers`):

1. the container's `restartPolicyRules`, in order: the first rule whose `exitCodes`
   (`operator: In | NotIn`, `values`) matches the exit code gives the action, `Restart`
   (this container) or `RestartAllContainers` (every container of the pod, in place: the
   pod keeps its UID, IP and volumes, init containers run again);
2. without a matching rule, the container's own `restartPolicy` when it sets one, else the
   pod's: `Always` restarts, `OnFailure` restarts a non-zero exit, `Never` does not;
3. a restartable init container (a sidecar, `restartPolicy: Always`) always restarts; a
   regular init container is never restarted after exit 0 (the pod's `Always` acts as
   `OnFailure` for it).

Pure: no I/O, unit-tested in tests/unit/kubesim/kubelet/test_restart_rules.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

__all__ = ["RESTART", "RESTART_ALL", "STAY", "Action", "exit_action", "has_restart_all_rule"]

Action = Literal["Restart", "RestartAllContainers", "Stay"]
RESTART: Final[Action] = "Restart"
RESTART_ALL: Final[Action] = "RestartAllContainers"
STAY: Final[Action] = "Stay"  # terminated for good


def _rule_matches(rule: Mapping[str, Any], code: int) -> bool:
    exit_codes = rule.get("exitCodes") or {}
    values = {int(v) for v in exit_codes.get("values") or ()}
    operator = exit_codes.get("operator")
    if operator == "In":
        return code in values
    if operator == "NotIn":
        return code not in values
    return False  # an operator the API server would have rejected


def exit_action(container: Mapping[str, Any], pod_policy: str, code: int, *, init: bool) -> Action:
    """The kubelet's decision for `container` (its spec) of a pod whose `restartPolicy` is
    `pod_policy`, after it exited with `code`; `init` for an entry of `initContainers`."""
    for rule in container.get("restartPolicyRules") or ():
        if isinstance(rule, Mapping) and _rule_matches(rule, code):
            action = rule.get("action")
            if action == RESTART_ALL:
                return RESTART_ALL
            if action == RESTART:
                return RESTART
    own = container.get("restartPolicy")
    if init and own == "Always":
        return RESTART  # a sidecar
    policy = str(own or pod_policy or "Always")
    if init and policy == "Always":
        policy = "OnFailure"
    if policy == "Always" or (policy == "OnFailure" and code != 0):
        return RESTART
    return STAY


def has_restart_all_rule(spec: Mapping[str, Any]) -> bool:
    """Whether some container of the pod `spec` can restart all containers: such pods
    report the `AllContainersRestarting` condition, as the kubelet does."""
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for rule in c.get("restartPolicyRules") or ():
            if isinstance(rule, Mapping) and rule.get("action") == RESTART_ALL:
                return True
    return False
