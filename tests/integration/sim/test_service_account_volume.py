"""The ServiceAccount admission plugin's token volume in the pod spec, as `kubectl describe
pod` shows it: `kube-api-access-<random>`, projected (token, the cluster CA, the namespace),
mounted read-only in every container at the token's path; none when automount is off, on
the pod or on its ServiceAccount."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from kubesim.process import SimProcess
from tests.sims import start_sim_none

pytestmark = [pytest.mark.kubectl]

PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(tmp_path_factory.mktemp("sa"))
    yield s
    s.stop()


def _pod(name: str, **spec: Any) -> str:
    containers = [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": containers, **spec},
        }
    )


def test_describe_shows_the_token_volume_and_its_mounts(sim: SimProcess) -> None:
    sim.kubectl("create", "-f", "-", input=_pod("with-token"))
    pod = json.loads(sim.kubectl("get", "pod", "with-token", "-o", "json").stdout)
    (volume,) = pod["spec"]["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    for container in pod["spec"]["containers"]:
        assert container["volumeMounts"] == [
            {"name": volume["name"], "readOnly": True, "mountPath": PATH}
        ]
    described = sim.kubectl("describe", "pod", "with-token").stdout
    assert f"{PATH} from {volume['name']} (ro)" in described
    assert re.search(rf"{volume['name']}:\n\s+Type:\s+Projected", described), described
    assert re.search(r"TokenExpirationSeconds:\s+3607", described)
    assert re.search(r"ConfigMapName:\s+kube-root-ca.crt", described)


def test_no_token_volume_when_automount_is_off(sim: SimProcess) -> None:
    sim.kubectl("create", "-f", "-", input=_pod("off", automountServiceAccountToken=False))
    assert re.search(r"Volumes:\s+<none>", sim.kubectl("describe", "pod", "off").stdout)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"},
               "automountServiceAccountToken": False}  # fmt: skip
    sim.kubectl("create", "-f", "-", input=json.dumps(account))
    sim.kubectl("create", "-f", "-", input=_pod("quiet", serviceAccountName="quiet"))
    pod = json.loads(sim.kubectl("get", "pod", "quiet", "-o", "json").stdout)
    assert "volumes" not in pod["spec"]
