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


def _get(sim: SimProcess, *what: str) -> Any:
    return json.loads(sim.kubectl("get", *what, "-o", "json").stdout)


def _typoed_deployment(name: str) -> dict[str, Any]:
    d = _deployment(name, replcas=2)
    d["metadata"]["labels"] = {"replcas": "a label's key is free"}
    d["metadata"]["annotations"] = {"example.com/typo": "kept"}
    pod = d["spec"]["template"]["spec"]
    pod["containers"][0]["imagePulPolicy"] = "Never"
    pod["containers"][0]["env"] = [{"name": "E", "value": "1", "valeu": "2"}]
    pod["nodeSelector"] = {"typo": "kept"}
    return d


def _assert_pruned(d: dict[str, Any]) -> None:
    assert "replcas" not in d["spec"]
    container = d["spec"]["template"]["spec"]["containers"][0]
    assert "imagePulPolicy" not in container
    assert container["env"] == [{"name": "E", "value": "1"}]
    assert d["metadata"]["labels"] == {"replcas": "a label's key is free"}
    assert d["metadata"]["annotations"]["example.com/typo"] == "kept"
    assert d["spec"]["template"]["spec"]["nodeSelector"] == {"typo": "kept"}
    fields = json.dumps(d["metadata"].get("managedFields") or [])
    assert "f:replcas" not in fields
    assert "f:imagePulPolicy" not in fields and "f:valeu" not in fields


def test_ignored_unknown_fields_of_built_in_types_are_not_stored(sim: SimProcess) -> None:
    """`--validate=false` (Ignore), `create --validate=ignore`, server-side apply and a
    client that does not say (Warn): every verb stores the object as kube-apiserver's
    decoding keeps it, unknown fields dropped at every depth, free-keyed maps whole."""
    out = _apply(sim, _typoed_deployment("pruned"), "--validate=false")
    assert out.returncode == 0, out.stderr
    _assert_pruned(_get(sim, "deployment", "pruned"))
    out = sim.kubectl(
        "create", "--validate=ignore", "-f", "-",
        input=json.dumps(_typoed_deployment("created")), check=False,
    )  # fmt: skip
    assert out.returncode == 0 and "unknown field" not in out.stderr, out.stderr
    _assert_pruned(_get(sim, "deployment", "created"))
    out = _apply(sim, _typoed_deployment("ssa"), "--server-side", "--validate=false")
    assert out.returncode == 0, out.stderr
    _assert_pruned(_get(sim, "deployment", "ssa"))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "free"},
          "data": {"replcas": "1", "a.b": "2"}, "dat": {"x": "y"}}  # fmt: skip
    assert _apply(sim, cm, "--validate=false").returncode == 0
    stored = _get(sim, "configmap", "free")
    assert stored["data"] == {"replcas": "1", "a.b": "2"} and "dat" not in stored


def test_warn_warns_and_drops(sim: SimProcess) -> None:
    out = _apply(sim, _typoed_deployment("warn-drop"), "--validate=warn")
    assert out.returncode == 0, out.stderr
    assert 'Warning: unknown field "spec.replcas"' in out.stderr
    assert 'unknown field "spec.template.spec.containers[0].env[0].valeu"' in out.stderr
    _assert_pruned(_get(sim, "deployment", "warn-drop"))
    out = sim.kubectl(
        "patch", "deployment", "warn-drop", "--type", "merge", "-p",
        json.dumps({"spec": {"minReadySeconds": 3, "minReadySecnds": 4}}),
    )  # fmt: skip
    assert 'Warning: unknown field "spec.minReadySecnds"' in out.stderr
    spec = _get(sim, "deployment", "warn-drop")["spec"]
    assert spec["minReadySeconds"] == 3 and "minReadySecnds" not in spec


def test_a_status_write_drops_unknown_status_fields(sim: SimProcess) -> None:
    assert _apply(sim, _deployment("status")).returncode == 0
    sim.kubectl(
        "patch", "deployment", "status", "--subresource=status", "--type", "merge", "-p",
        json.dumps({"status": {"observedGeneration": 1, "replcas": 5}}),
    )  # fmt: skip
    status = _get(sim, "deployment", "status")["status"]
    assert status.get("observedGeneration") == 1 and "replcas" not in status


def test_a_body_of_many_unknown_fields_is_stored_without_them(sim: SimProcess) -> None:
    """Hostile input: ten thousand unknown fields under Ignore, at the top of the spec and
    in every container, cost one walk and are all gone."""
    deployment = _deployment("flood-ignored", **{f"typo{i}": i for i in range(10_000)})
    containers = deployment["spec"]["template"]["spec"]["containers"]
    containers += [{"name": f"c{i}", "image": "busybox", f"typo{i}": i} for i in range(200)]
    assert _apply(sim, deployment, "--validate=false").returncode == 0
    stored = _get(sim, "deployment", "flood-ignored")
    assert not [k for k in stored["spec"] if k.startswith("typo")]
    kept = stored["spec"]["template"]["spec"]["containers"]
    assert len(kept) == 201 and not [k for c in kept for k in c if k.startswith("typo")]
    assert sim.kubectl("get", "--raw", "/healthz").stdout == "ok"
