"""`validate_update` compares the defaulted forms: a re-applied manifest whose lists lack the
defaults create filled in is no change, and a real change is still refused."""

from __future__ import annotations

import copy
from typing import Any

from jobset.api import default_jobset
from jobset.api.validation import validate_update
from tests import builders


def _bare() -> dict[str, Any]:
    js = builders.jobset("js", builders.rjob("w", 2), namespace="ns")
    for rjob in js["spec"]["replicatedJobs"]:
        job = rjob["template"]["spec"]
        job.pop("completionMode", None)
        job["template"]["spec"].pop("restartPolicy", None)
    return js


def test_the_manifest_without_its_defaults_is_no_change() -> None:
    stored = dict(default_jobset(_bare()))
    assert stored != _bare()
    assert validate_update(_bare(), stored) == []


def test_a_real_change_is_still_refused() -> None:
    stored = dict(default_jobset(_bare()))
    changed = copy.deepcopy(_bare())
    changed["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "restartPolicy"
    ] = "Never"
    (err,) = validate_update(changed, stored)
    assert str(err).startswith("spec.replicatedJobs: Invalid value: ")
    assert str(err).endswith("field is immutable")
