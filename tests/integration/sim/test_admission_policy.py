"""ValidatingAdmissionPolicy in the simulated cluster, with the in-place restart agent's policy
from examples/in-place-restart.yaml.

The agent's ServiceAccount may `patch pods` in its namespace, and every container of the
pod can read its token. The policy shipped beside the Role must leave the agent its one
write - the attempt annotation of its own pod, sent by the agent's own client code - and
refuse that token everything else a Role cannot tell apart: another pod's image, another
pod's attempt, a label of its own pod. The cluster admin is not affected.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset.agent.apiclient import AgentApiError, KubeconfigApi
from jobset.api import constants as c
from jobset.runtime.client import PODS, ApiError, Client
from kubesim.process import SimProcess
from tests.sims import start_sim_none
from tests.tokens import kubeconfig_as, request_token

pytestmark = [pytest.mark.kubectl]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "in-place-restart.yaml"
ACCOUNT = "jobset-in-place-restart"
POLICY_KINDS = {
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
ATTEMPT = c.IN_PLACE_RESTART_ATTEMPT_KEY
DENIED = f"ValidatingAdmissionPolicy '{ACCOUNT}' with binding '{ACCOUNT}' denied request: "
ONLY_ANNOTATION = (
    f"ServiceAccount '{ACCOUNT}' can only update the Pod annotation "
    f"'{c.IN_PLACE_RESTART_ATTEMPT_KEY}'."
)
ONLY_OWN_POD = f"ServiceAccount '{ACCOUNT}' can only update the Pod its token is bound to."


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(tmp_path_factory.mktemp("sim"))
    yield s
    s.stop()


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "train"}},
        "spec": {
            "serviceAccountName": ACCOUNT,
            "containers": [{"name": "worker", "image": "busybox:1.36"}],
        },
    }


def get_pod(sim: SimProcess, name: str) -> dict[str, Any]:
    return dict(json.loads(sim.kubectl("get", "pod", name, "-o", "json").stdout))


async def test_the_agents_token_may_write_only_its_own_attempt(
    sim: SimProcess, tmp_path: Path
) -> None:
    shipped = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d["kind"] in POLICY_KINDS]
    assert {d["kind"] for d in shipped} == POLICY_KINDS
    sim.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(shipped))
    sim.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([pod("a"), pod("b")]))
    token = request_token(sim, "default", ACCOUNT, bound_pod=get_pod(sim, "a"))
    # The token may only patch pods (no get): plain PATCH requests, as the agent sends.
    client = await Client.connect(str(kubeconfig_as(sim, token, tmp_path / "token")))

    async def refused(name: str, body: dict[str, Any], patch_type: str = "strategic") -> str:
        with pytest.raises(ApiError) as err:
            await client.patch(PODS, name, body, "default", patch_type=patch_type)
        assert (err.value.status, err.value.reason) == (422, "Invalid"), err.value
        return err.value.message

    try:
        # The agent's own write, by the agent's client: passes.
        own = KubeconfigApi(client, "default", "js", "a")
        await own.patch_attempt(3)
        assert get_pod(sim, "a")["metadata"]["annotations"][ATTEMPT] == "3"

        # Another pod's image: refused, with the policy's message.
        swap = {"spec": {"containers": [{"name": "worker", "image": "evil:latest"}]}}
        message = await refused("b", swap)
        assert message == f'pods "b" is forbidden: {DENIED}{ONLY_ANNOTATION}'
        assert get_pod(sim, "b")["spec"]["containers"][0]["image"] == "busybox:1.36"

        # Another pod's attempt (would restart or fail another JobSet): refused.
        with pytest.raises(AgentApiError) as other:
            await KubeconfigApi(client, "default", "js", "b").patch_attempt(9)
        assert other.value.status == 422 and f"{DENIED}{ONLY_OWN_POD}" in str(other.value)
        assert ATTEMPT not in (get_pod(sim, "b")["metadata"].get("annotations") or {})

        # Its own pod's labels, or its image: refused.
        message = await refused("a", {"metadata": {"labels": {"app": "other"}}}, "merge")
        assert message.endswith(f"{DENIED}{ONLY_ANNOTATION}")
        assert (await refused("a", swap)).endswith(f"{DENIED}{ONLY_ANNOTATION}")

        # Its own pod's finalizers (a pod that can never be deleted) or owner references
        # (the pod handed to another controller, or to the garbage collector): refused.
        stuck = {"metadata": {"finalizers": ["example.com/never"]}}
        assert (await refused("a", stuck, "merge")).endswith(f"{DENIED}{ONLY_ANNOTATION}")
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "other",
            "uid": "00000000-0000-0000-0000-000000000001",
            "controller": True,
        }
        owned = {"metadata": {"ownerReferences": [owner]}}
        assert (await refused("a", owned, "merge")).endswith(f"{DENIED}{ONLY_ANNOTATION}")
        meta = get_pod(sim, "a")["metadata"]
        assert "finalizers" not in meta and "ownerReferences" not in meta
    finally:
        await client.close()

    # The admin is not the agent: the same image change passes.
    sim.kubectl("patch", "pod", "b", "-p", json.dumps(swap))
    assert get_pod(sim, "b")["spec"]["containers"][0]["image"] == "evil:latest"
