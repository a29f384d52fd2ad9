"""`fieldValidation` as kube-apiserver does it, through the real kubectl (which sends
`Strict` by default, `Warn` with `--validate=warn`, `Ignore` with `--validate=false`):
typos in a JobSet (a custom resource with a structural schema) and in a Deployment (a
built-in type) are refused with kube-apiserver's text on create, client-side apply of a
change (a patch) and server-side apply; warned about under Warn and without a directive
(`kubectl patch` sends none); not reported under Ignore; `x-kubernetes-preserve-unknown-fields` keeps
what it covers; and a body of many typos gets a bounded answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.process import SimProcess
from tests.sims import start_sim_none

pytestmark = [pytest.mark.kubectl]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "simple.yaml"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(tmp_path_factory.mktemp("fv"), jobset_crd=True)
    yield s
    s.stop()


def _jobset(name: str) -> dict[str, Any]:
    js: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    js["metadata"]["name"] = name
    return js


def _deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
            **spec,
        },
    }


def _apply(sim: SimProcess, obj: dict[str, Any], *flags: str) -> Any:
    return sim.kubectl("apply", *flags, "-f", "-", input=json.dumps(obj), check=False)


def test_jobset_typos_are_refused_with_kube_apiservers_text(sim: SimProcess) -> None:
    js = _jobset("typo")
    js["spec"]["replicatedJobs"][0]["replcas"] = 2
    js["spec"]["faillurePolicy"] = {"maxRestarts": 3}
    out = _apply(sim, js)
    assert out.returncode != 0
    assert (
        'JobSet in version "v1alpha2" cannot be handled as a JobSet: strict decoding error: '
        'unknown field "spec.faillurePolicy", unknown field "spec.replicatedJobs[0].replcas"'
    ) in out.stderr
    assert sim.kubectl("get", "jobset", "typo", check=False).returncode != 0


def test_a_typo_added_by_a_later_apply_is_refused_too(sim: SimProcess) -> None:
    js = _jobset("later")
    assert _apply(sim, js).returncode == 0
    js["spec"]["faillurePolicy"] = {"maxRestarts": 3}
    out = _apply(sim, js)  # client-side apply of a change: a merge patch
    assert out.returncode != 0
    assert 'strict decoding error: unknown field "spec.faillurePolicy"' in out.stderr
    stored = json.loads(sim.kubectl("get", "jobset", "later", "-o", "json").stdout)
    assert "faillurePolicy" not in stored["spec"]
    # kubectl patch sends no directive: the server's default, Warn, stores it pruned
    patch = json.dumps({"spec": {"suspend": True, "suspnd": True}})
    out = sim.kubectl("patch", "jobset", "later", "--type", "merge", "-p", patch)
    assert 'Warning: unknown field "spec.suspnd"' in out.stderr
    stored = json.loads(sim.kubectl("get", "jobset", "later", "-o", "json").stdout)
    assert stored["spec"]["suspend"] is True and "suspnd" not in stored["spec"]


def test_built_in_typos_are_refused_warned_or_dropped(sim: SimProcess) -> None:
    out = _apply(sim, _deployment("strict", replcas=2))
    assert out.returncode != 0
    assert (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.replcas"'
    ) in out.stderr
    warned = _apply(sim, _deployment("warned", replcas=2), "--validate=warn")
    assert warned.returncode == 0, warned.stderr
    assert 'Warning: unknown field "spec.replcas"' in warned.stderr
    ignored = _apply(sim, _deployment("ignored", replcas=2), "--validate=false")
    assert ignored.returncode == 0 and "unknown field" not in ignored.stderr
    out = sim.kubectl(
        "patch", "deployment", "warned", "--type", "strategic", "-p",
        json.dumps({"spec": {"paused": True, "pasued": True}}),
    )  # fmt: skip
    assert 'Warning: unknown field "spec.pasued"' in out.stderr


def test_server_side_apply_refuses_typos(sim: SimProcess) -> None:
    js = _jobset("ssa")
    js["spec"]["faillurePolicy"] = {"maxRestarts": 3}
    out = _apply(sim, js, "--server-side")
    assert out.returncode != 0
    assert 'strict decoding error: unknown field "spec.faillurePolicy"' in out.stderr


def test_without_a_directive_the_server_warns(sim: SimProcess) -> None:
    """A client that does not say gets kube-apiserver's default, Warn: stored, with one
    Warning header per problem (`kubectl create --raw` sends no fieldValidation)."""
    body = json.dumps(_deployment("raw", replcas=2))
    out = sim.kubectl(
        "create", "--raw", "/apis/apps/v1/namespaces/default/deployments", "-f", "-",
        input=body, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert 'Warning: unknown field "spec.replcas"' in out.stderr


def test_preserve_unknown_fields_is_honoured(sim: SimProcess) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bags.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Bag", "plural": "bags", "singular": "bag", "listKind": "BagList"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "free": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                        },
                                        "size": {"type": "integer"},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    sim.kubectl("apply", "-f", "-", input=json.dumps(crd))
    sim.kubectl("wait", "--for=condition=Established", "crd/bags.example.com")
    bag = {"apiVersion": "example.com/v1", "kind": "Bag", "metadata": {"name": "b"},
           "spec": {"size": 1, "free": {"any": {"thing": 1}}}}  # fmt: skip
    assert _apply(sim, bag).returncode == 0
    bag["spec"]["szie"] = 2
    out = _apply(sim, bag)
    assert out.returncode != 0 and 'unknown field "spec.szie"' in out.stderr


def test_a_body_of_many_typos_gets_a_bounded_answer(sim: SimProcess) -> None:
    """Hostile input: ten thousand unknown fields are one refusal naming the first hundred."""
    deployment = _deployment("flood", **{f"typo{i}": i for i in range(10_000)})
    out = _apply(sim, deployment)
    assert out.returncode != 0
    assert out.stderr.count("unknown field") == 100
    assert 'unknown field "spec.typo0"' in out.stderr
    assert sim.kubectl("get", "--raw", "/healthz").stdout == "ok"
