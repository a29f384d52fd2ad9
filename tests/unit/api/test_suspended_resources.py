"""KEP-1150's update rule (gate MutablePodResourcesForSuspendedJobSets) and the resume
patch that carries the new resources to a Job (end to end:
tests/integration/controllers/test_suspended_resources.py)."""

from __future__ import annotations

import copy
from typing import Any

from jobset.api import constants as c
from jobset.api.validation import validate_update
from jobset.controllers.jobs import resource_patches, resume_patch
from tests import builders

GATE = {c.FEATURE_MUTABLE_POD_RESOURCES: True}


def _js(suspend: bool = True) -> dict[str, Any]:
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "4"}, "claims": [{"name": "gpu"}]},
                }
            ],
        }
    }
    w = builders.rjob("w", 2, pod_template=pod)
    return builders.jobset("js", w, namespace="ns", suspend=suspend)


def _pod(js: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return spec


def _resized(js: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(js)
    _pod(new)["containers"][0]["resources"]["requests"] = {"cpu": "2"}
    _pod(new)["containers"][0]["resources"]["limits"] = {"cpu": "2"}
    _pod(new)["initContainers"][0]["resources"] = {"requests": {"memory": "1Gi"}}
    return new


def _immutable(errs: list[Any]) -> bool:
    return any("field is immutable" in str(e) for e in errs)


def test_requests_and_limits_change_while_suspended_behind_the_gate() -> None:
    old = _js()
    assert validate_update(_resized(old), old, features=GATE) == []
    assert _immutable(validate_update(_resized(old), old))  # gate off
    running = _js(suspend=False)
    assert _immutable(validate_update(_resized(running), running, features=GATE))


def test_only_requests_and_limits() -> None:
    old = _js()
    claims = _resized(old)
    _pod(claims)["containers"][0]["resources"]["claims"] = [{"name": "other"}]
    assert _immutable(validate_update(claims, old, features=GATE))
    image = _resized(old)
    _pod(image)["initContainers"][0]["image"] = "other"
    assert _immutable(validate_update(image, old, features=GATE))
    added = _resized(old)
    _pod(added)["containers"].append({"name": "side", "image": "busybox"})
    assert _immutable(validate_update(added, old, features=GATE))


def test_the_resume_patch_carries_changed_resources_by_container_name() -> None:
    js = _resized(_js())
    rjob = js["spec"]["replicatedJobs"][0]
    job = {
        "metadata": {"name": "js-w-0", "resourceVersion": "5"},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "resources": {
                                "requests": {"cpu": "4", "memory": "1Gi"},
                                "claims": [{"name": "gpu"}],
                            },
                        }
                    ],
                    "initContainers": [{"name": "init", "resources": {}}],
                }
            },
        },
    }
    assert resource_patches(job, rjob) == {
        # memory dropped from the template: removed (null); claims untouched.
        "containers": [
            {
                "name": "main",
                "resources": {"requests": {"memory": None, "cpu": "2"}, "limits": {"cpu": "2"}},
            }
        ],
        "initContainers": [{"name": "init", "resources": {"requests": {"memory": "1Gi"}}}],
    }
    pod = resume_patch(job, rjob, resources=True)["spec"]["template"]["spec"]
    assert pod["containers"][0]["name"] == "main"
    assert "containers" not in resume_patch(job, rjob)["spec"]["template"]["spec"]
    # Equal amounts spelled differently are no change.
    same = copy.deepcopy(job)
    same["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "2000m"},
        "limits": {"cpu": 2},
    }
    same["spec"]["template"]["spec"]["initContainers"][0]["resources"] = {
        "requests": {"memory": "1024Mi"}
    }
    assert resource_patches(same, rjob) == {}
