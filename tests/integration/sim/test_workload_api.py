"""The Workload-Aware Scheduling APIs of the simulated API server, through the real kubectl:
`scheduling.k8s.io/v1alpha2` Workload and PodGroup and the pod field `spec.schedulingGroup`,
served as kube-apiserver serves them behind its feature gates."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kubesim.process import SimProcess, start_sim

pytestmark = [pytest.mark.kubectl, pytest.mark.timeout(120)]

ALL_GATES = (
    "GenericWorkload=true,GangScheduling=true,"
    "TopologyAwareWorkloadScheduling=true,WorkloadAwarePreemption=true"
)


@pytest.fixture(scope="module")
def was(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(
        tmp_path_factory.mktemp("was"),
        "--sim-level",
        "none",
        "--kube-feature-gates",
        ALL_GATES,
    )
    yield s
    s.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("plain"), "--sim-level", "none")
    yield s
    s.stop()


def _apply(s: SimProcess, doc: str, check: bool = True) -> str:
    r = s.kubectl("apply", "-f", "-", input=doc, check=check)
    return r.stdout + r.stderr


def _get(s: SimProcess, *what: str) -> dict[str, object]:
    out: dict[str, object] = json.loads(s.kubectl("get", *what, "-o", "json").stdout)
    return out


PG = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {name}}}
spec:
  schedulingPolicy: {{gang: {{minCount: 2}}}}
{extra}
"""


def test_gates_off_by_default_types_not_served_and_field_dropped(plain: SimProcess) -> None:
    r = plain.kubectl("api-resources", "--api-group=scheduling.k8s.io")
    assert "podgroups" not in r.stdout and "priorityclasses" in r.stdout
    _apply(plain, POD.format(name="dropped", group="pg"))
    spec = _get(plain, "pod", "dropped")["spec"]
    assert isinstance(spec, dict) and "schedulingGroup" not in spec


def test_discovery_and_explain(was: SimProcess) -> None:
    r = was.kubectl("api-resources", "--api-group=scheduling.k8s.io")
    assert "podgroups" in r.stdout and "workloads" in r.stdout
    explain = was.kubectl("explain", "podgroup.spec.schedulingConstraints.topology").stdout
    assert "key\t<string> -required-" in explain
    explain = was.kubectl("explain", "workload.spec.podGroupTemplates").stdout
    assert "schedulingPolicy" in explain and "disruptionMode" in explain


def test_podgroup_defaults_and_priority_admission(was: SimProcess) -> None:
    _apply(
        was,
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
        "metadata: {name: gang-high}\nvalue: 1000\n",
    )
    _apply(was, PG.format(name="defaulted", extra="  priorityClassName: gang-high"))
    spec = _get(was, "podgroup", "defaulted")["spec"]
    assert isinstance(spec, dict)
    assert spec["disruptionMode"] == "Pod" and spec["priority"] == 1000
    out = _apply(was, PG.format(name="nopc", extra="  priorityClassName: missing"), check=False)
    assert "no PriorityClass with name missing was found" in out


def test_podgroup_validation_messages(was: SimProcess) -> None:
    bad = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: bad}
spec:
  podGroupTemplateRef: {workload: {workloadName: w}}
  schedulingPolicy: {gang: {minCount: 0}}
  disruptionMode: Sometimes
  schedulingConstraints: {topology: [{key: a}, {key: b}]}
"""
    out = _apply(was, bad, check=False)
    assert "spec.podGroupTemplateRef.workload.podGroupTemplateName: Required value" in out
    assert (
        "spec.schedulingPolicy.gang.minCount: Invalid value: 0: "
        "must be greater than or equal to 1" in out
    )
    assert 'spec.disruptionMode: Unsupported value: "Sometimes"' in out
    assert "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item" in out
    none = PG.replace("schedulingPolicy: {{gang: {{minCount: 2}}}}", "schedulingPolicy: {{}}")
    out = _apply(was, none.format(name="nopolicy", extra=""), check=False)
    assert "spec.schedulingPolicy: Invalid value: must specify one of: `basic`, `gang`" in out


def test_workload_validation_and_immutability(was: SimProcess) -> None:
    wl = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {{name: wl}}
spec:
  controllerRef: {{apiGroup: jobset.x-k8s.io, kind: JobSet, name: js}}
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {{gang: {{minCount: {count}}}}}
"""
    _apply(was, wl.format(count=2))
    out = _apply(was, wl.format(count=3), check=False)
    assert "spec.podGroupTemplates: Forbidden: field is immutable" in out
    dup = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: dup}
spec:
  podGroupTemplates:
  - {name: a, schedulingPolicy: {basic: {}}}
  - {name: a, schedulingPolicy: {basic: {}}}
"""
    assert "spec.podGroupTemplates[1]: Duplicate value" in _apply(was, dup, check=False)
    empty = (
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: Workload\nmetadata: {name: e}\nspec: {}\n"
    )
    assert "spec.podGroupTemplates: Required value" in _apply(was, empty, check=False)


def test_podgroup_spec_immutable_status_writable(was: SimProcess) -> None:
    _apply(was, PG.format(name="fixed", extra=""))
    out = was.kubectl(
        "patch",
        "podgroup",
        "fixed",
        "--type=merge",
        "-p",
        '{"spec":{"schedulingPolicy":{"gang":{"minCount":5}}}}',
        check=False,
    )
    assert "spec.schedulingPolicy: Forbidden: field is immutable" in out.stderr
    cond = {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    was.kubectl(
        "patch",
        "podgroup",
        "fixed",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": [cond]}, "spec": {"disruptionMode": "PodGroup"}}),
    )
    got = _get(was, "podgroup", "fixed")
    assert got["status"] == {"conditions": [cond]}
    assert isinstance(got["spec"], dict) and got["spec"]["disruptionMode"] == "Pod"


POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  schedulingGroup: {{podGroupName: {group}}}
  containers: [{{name: c, image: busybox}}]
"""


def test_pod_scheduling_group_validated_and_immutable(was: SimProcess) -> None:
    _apply(was, POD.format(name="member", group="workers"))
    spec = _get(was, "pod", "member")["spec"]
    assert isinstance(spec, dict) and spec["schedulingGroup"] == {"podGroupName": "workers"}
    out = was.kubectl(
        "patch",
        "pod",
        "member",
        "--type=merge",
        "-p",
        '{"spec":{"schedulingGroup":{"podGroupName":"other"}}}',
        check=False,
    ).stderr
    assert "pod updates may not change fields" in out
    out = _apply(was, POD.format(name="badgroup", group="Not_A_Name"), check=False)
    assert 'spec.schedulingGroup.podGroupName: Invalid value: "Not_A_Name"' in out
    out = _apply(was, POD.replace("podGroupName: {group}", "").format(name="nogroup"), check=False)
    assert "spec.schedulingGroup.podGroupName: Required value" in out
