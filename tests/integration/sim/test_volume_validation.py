"""The API refuses every name, key and path a kubelet would join to a host directory, with
kube-apiserver's messages (`pkg/apis/core/validation`), for Pods and for pod templates; and
a Secret whose base64 Go cannot decode, as kube-apiserver's body decoding refuses it.

The real kubectl against `jobset sim --sim-level none`.
"""

from __future__ import annotations

import json
import uuid

import pytest

from kubesim.process import SimProcess

pytestmark = [pytest.mark.kubectl]

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def _pod_spec(
    volume: dict[str, object], mount: dict[str, object] | None = None
) -> dict[str, object]:
    container: dict[str, object] = {"name": "main", "image": "busybox"}
    if mount is not None:
        container["volumeMounts"] = [mount]
    return {"restartPolicy": "Never", "volumes": [volume], "containers": [container]}


def _create(sim: SimProcess, obj: dict[str, object]) -> str:
    ns = f"v-{uuid.uuid4().hex[:8]}"
    sim.kubectl("create", "namespace", ns)
    result = sim.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(obj), check=False)
    assert result.returncode != 0, result.stdout
    return result.stderr.strip()


CM_ITEMS = {"name": "cm", "configMap": {"name": "cm", "items": [{"key": "k", "path": "PATH"}]}}


def _items(path: str) -> dict[str, object]:
    return json.loads(json.dumps(CM_ITEMS).replace("PATH", path))


POD_CASES = [
    pytest.param(
        _pod_spec({"name": "../../etc", "emptyDir": {}}),
        f'spec.volumes[0].name: Invalid value: "../../etc": {LABEL_MSG}',
        id="volume-name",
    ),
    pytest.param(
        _pod_spec(_items("../escape")),
        'spec.volumes[0].configMap.items[0].path: Invalid value: "../escape": '
        "must not contain '..'",
        id="items-backstep",
    ),
    pytest.param(
        _pod_spec(_items("/etc/passwd")),
        'spec.volumes[0].configMap.items[0].path: Invalid value: "/etc/passwd": '
        "must be a relative path",
        id="items-absolute",
    ),
    pytest.param(
        _pod_spec(_items("..data")),
        "spec.volumes[0].configMap.items[0].path: Invalid value: \"..data\": must not start with '..'",
        id="items-reserved",
    ),
    pytest.param(
        _pod_spec(
            {
                "name": "s",
                "secret": {"secretName": "s", "items": [{"key": "k", "path": "a/../../b"}]},
            }
        ),
        "spec.volumes[0].secret.items[0].path: Invalid value: \"a/../../b\": must not contain '..'",
        id="secret-items",
    ),
    pytest.param(
        _pod_spec(
            {
                "name": "p",
                "projected": {
                    "sources": [
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "/x", "fieldRef": {"fieldPath": "metadata.name"}}
                                ]
                            }
                        }
                    ]
                },
            }
        ),
        'spec.volumes[0].projected.sources[0].downwardAPI.items[0].path: Invalid value: "/x": '
        "must be a relative path",
        id="projected-downward",
    ),
    pytest.param(
        _pod_spec(
            {"name": "v", "emptyDir": {}}, {"name": "v", "mountPath": "/d", "subPath": "../x"}
        ),
        "spec.containers[0].volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'",
        id="subpath",
    ),
    pytest.param(
        _pod_spec(
            {"name": "v", "emptyDir": {}}, {"name": "v", "mountPath": "/d", "subPathExpr": "/abs"}
        ),
        'spec.containers[0].volumeMounts.subPathExpr: Invalid value: "/abs": must be a relative path',
        id="subpathexpr",
    ),
]


@pytest.mark.parametrize(("spec", "message"), POD_CASES)
def test_pod_volume_paths_are_validated(
    sim_none: SimProcess, spec: dict[str, object], message: str
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    assert _create(sim_none, pod) == f'The Pod "p" is invalid: {message}'


@pytest.mark.parametrize(("spec", "message"), POD_CASES[:1] + POD_CASES[6:7])
def test_pod_templates_are_validated(
    sim_none: SimProcess, spec: dict[str, object], message: str
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": spec}},
    }
    assert (
        _create(sim_none, job)
        == f'The Job "j" is invalid: {message.replace("spec.", "spec.template.spec.", 1)}'
    )
    spec = {**spec, "restartPolicy": "Always"}
    labels = {"app": "x"}
    for kind, api in (("Deployment", "apps/v1"), ("ReplicaSet", "apps/v1")):
        obj = {
            "apiVersion": api,
            "kind": kind,
            "metadata": {"name": "w"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": spec},
            },
        }
        expected = message.replace("spec.", "spec.template.spec.", 1)
        assert _create(sim_none, obj) == f'The {kind} "w" is invalid: {expected}'


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        pytest.param(
            "ConfigMap",
            {"data": {"..": "x"}},
            "data[..]: Invalid value: \"..\": must not be '..'",
            id="cm-dotdot",
        ),
        pytest.param(
            "ConfigMap",
            {"data": {"a/b": "x"}},
            f'data[a/b]: Invalid value: "a/b": {KEY_MSG}',
            id="cm-slash",
        ),
        pytest.param(
            "ConfigMap",
            {"binaryData": {".": "eA=="}},
            "binaryData[.]: Invalid value: \".\": must not be '.'",
            id="cm-binary-dot",
        ),
        pytest.param(
            "Secret",
            {"stringData": {"..x": "x"}},
            "data[..x]: Invalid value: \"..x\": must not start with '..'",
            id="secret-string-data",
        ),
        pytest.param(
            "Secret",
            {"data": {"k" * 254: "eA=="}},
            f'data[{"k" * 254}]: Invalid value: "{"k" * 254}": must be no more than 253 characters',
            id="secret-long-key",
        ),
    ],
)
def test_config_keys_are_validated(
    sim_none: SimProcess, kind: str, data: dict[str, object], message: str
) -> None:
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "c"}, **data}
    assert _create(sim_none, obj) == f'The {kind} "c" is invalid: {message}'


@pytest.mark.parametrize(
    ("value", "offset"),
    [
        pytest.param("YQ=", 3, id="short-padding"),
        pytest.param("YQ", 0, id="no-padding"),
        pytest.param("a$bc", 1, id="bad-char"),
        pytest.param("YQ==YQ==", 4, id="after-padding"),
        pytest.param("Y===", 1, id="early-padding"),
    ],
)
def test_bad_base64_is_refused_as_go_decodes_it(
    sim_none: SimProcess, value: str, offset: int
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": value}}
    assert _create(sim_none, secret) == (
        'Error from server (BadRequest): error when creating "STDIN": Secret in version "v1" '
        f"cannot be handled as a Secret: illegal base64 data at input byte {offset}"
    )


def _workload(kind: str, spec: dict[str, object], labels: dict[str, str]) -> dict[str, object]:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    body: dict[str, object] = {"template": {"metadata": {"labels": labels}, "spec": spec}}
    if kind != "Job":
        body["selector"] = {"matchLabels": {"app": "x"}}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "w"}, "spec": body}


def _containers(*containers: dict[str, object], policy: str = "Always") -> dict[str, object]:
    return {"restartPolicy": policy, "containers": list(containers)}


@pytest.mark.parametrize(
    ("kind", "spec", "labels", "message"),
    [
        pytest.param(
            "Deployment",
            _containers({"name": "main", "image": ""}),
            {"app": "x"},
            "spec.template.spec.containers[0].image: Required value",
            id="deployment-empty-image",
        ),
        pytest.param(
            "ReplicaSet",
            _containers({"name": "main", "image": "i"}, policy="Never"),
            {"app": "x"},
            'spec.template.spec.restartPolicy: Unsupported value: "Never": '
            'supported values: "Always"',
            id="replicaset-restart-policy",
        ),
        pytest.param(
            "Deployment",
            _containers({"name": "main", "image": "i"}),
            {"app": "y"},
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"y"}: '
            "`selector` does not match template `labels`",
            id="deployment-selector-mismatch",
        ),
        pytest.param(
            "Job",
            _containers({"name": "Main", "image": "i"}, policy="Never"),
            {},
            f'spec.template.spec.containers[0].name: Invalid value: "Main": {LABEL_MSG}',
            id="job-container-name",
        ),
        pytest.param(
            "Job",
            _containers({"name": "a", "image": "i"}, {"name": "a", "image": "i"}, policy="Never"),
            {},
            'spec.template.spec.containers[1].name: Duplicate value: "a"',
            id="job-duplicate-container",
        ),
        pytest.param(
            "Job",
            _containers(
                {"name": "a", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                policy="Never",
            ),
            {},
            'spec.template.spec.containers[0].volumeMounts[0].name: Not found: "v"',
            id="job-mount-of-no-volume",
        ),
    ],
)
def test_workload_templates_follow_kube_apiserver(
    sim_none: SimProcess,
    kind: str,
    spec: dict[str, object],
    labels: dict[str, str],
    message: str,
) -> None:
    assert (
        _create(sim_none, _workload(kind, spec, labels)) == f'The {kind} "w" is invalid: {message}'
    )
