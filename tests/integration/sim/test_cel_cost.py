"""CEL cost limits in the simulated API server, through kubectl: a CRD rule whose evaluation
passes kube-apiserver's per-call limit is cancelled and the object refused with
apiextensions-apiserver's text, a cheap object of the same CRD is stored, and the server
answers as before; a ValidatingAdmissionPolicy expression past the limit fails with
kube-apiserver's text and its failurePolicy denies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubesim.process import SimProcess
from tests.sims import start_sim_none

pytestmark = [pytest.mark.kubectl]

RULE = 'self.all(a, self.all(b, self.all(c, a + b + c != "")))'
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "piles.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Pile", "plural": "piles", "singular": "pile", "listKind": "PileList"},
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
                                    "items": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                        "x-kubernetes-validations": [
                                            {"rule": RULE, "message": "no empty triples"}
                                        ],
                                    }
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim_none(tmp_path_factory.mktemp("celcost"))
    s.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    s.kubectl("wait", "--for=condition=Established", "crd/piles.example.com")
    yield s
    s.stop()


def _pile(name: str, n: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Pile",
        "metadata": {"name": name},
        "spec": {"items": [f"s{i}" for i in range(n)]},
    }


def test_an_expensive_rule_is_cancelled_with_kube_apiservers_text(sim: SimProcess) -> None:
    out = sim.kubectl("create", "-f", "-", input=json.dumps(_pile("big", 120)), check=False)
    assert out.returncode != 0
    assert (
        'spec.items: Invalid value: "array": \'operation cancelled: actual cost limit '
        "exceeded': no further validation rules will be run due to call cost exceeds limit "
        "for rule: no empty triples"
    ) in out.stderr
    assert sim.kubectl("get", "--raw", "/healthz").stdout == "ok"
    sim.kubectl("create", "-f", "-", input=json.dumps(_pile("small", 5)))
    assert (
        sim.kubectl("get", "pile", "small", "-o", "name").stdout.strip() == "pile.example.com/small"
    )


def test_an_expensive_policy_expression_is_cancelled(sim: SimProcess) -> None:
    numbers = "[" + ", ".join(str(i) for i in range(100)) + "]"
    expression = f"{numbers}.all(a, {numbers}.all(b, {numbers}.all(c, a + b + c >= 0)))"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "spin"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                     "resources": ["configmaps"]}
                ]
            },
            "validations": [{"expression": expression}],
        },
    }  # fmt: skip
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "spin"},
        "spec": {"policyName": "spin", "validationActions": ["Deny"]},
    }
    sim.kubectl("apply", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1",
                                                      "items": [policy, binding]}))  # fmt: skip
    try:
        out = sim.kubectl("create", "configmap", "spun", check=False)
        assert out.returncode != 0
        assert (
            "ValidatingAdmissionPolicy 'spin' with binding 'spin' denied request: expression "
            f"'{expression}' resulted in error: operation cancelled: actual cost limit exceeded"
        ) in out.stderr
        assert sim.kubectl("get", "--raw", "/healthz").stdout == "ok"
    finally:
        sim.kubectl("delete", "validatingadmissionpolicybinding", "spin")
    sim.kubectl("create", "configmap", "after")
