"""`--max-jobs-per-jobset` and `--max-pods-per-job`: the flags reach the admission webhook
and the controller's check of stored JobSets, and both refuse what is over them with the
same field error (the rule itself: tests/unit/api/test_validation.py)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from jobset import wiring
from jobset.api import constants as c
from jobset.api import validation
from jobset.api.validation import Limits
from jobset.cli import build_parser
from jobset.runtime import ManagerOptions, Request
from jobset.runtime.cache import object_key
from jobset.webhooks.jobset_webhook import JobSetWebhook
from jobset.webhooks.review import AdmissionRequest

from .helpers import NS, jobset, rjob
from .test_act import FakeClient, _controller

JOBS_ERROR = (
    "spec.replicatedJobs[0].replicas: Invalid value: 11: must be no more than 10: a JobSet may "
    "have at most 10 Jobs (the sum of replicas over spec.replicatedJobs; the controller's "
    "--max-jobs-per-jobset flag sets this limit)"
)


def test_flag_defaults_are_the_validation_defaults() -> None:
    args = build_parser().parse_args(["controller"])
    assert wiring.jobset_limits(args) == validation.DEFAULT_LIMITS
    assert validation.DEFAULT_LIMITS == Limits(
        wiring.DEFAULT_MAX_JOBS_PER_JOBSET, wiring.DEFAULT_MAX_PODS_PER_JOB
    )


@pytest.mark.parametrize("command", [["controller"], ["dev", "--kubeconfig", "k"]])
def test_flags_set_the_limits(command: list[str]) -> None:
    args = build_parser().parse_args(
        [*command, "--max-jobs-per-jobset", "10", "--max-pods-per-job", "7"]
    )
    assert wiring.jobset_limits(args) == Limits(10, 7)
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--max-jobs-per-jobset", "0"])


def test_components_get_the_limits_of_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """add_jobset_components hands the flags' limits to the reconciler and the webhooks."""
    import jobset.controllers.gang_controller as gang_module
    import jobset.controllers.jobset_controller as controller_module
    import jobset.placement.setup as placement_setup
    import jobset.webhooks as webhooks_module

    seen: dict[str, Any] = {}

    class Controller:
        def __init__(self, manager: Any, **kwargs: Any) -> None:
            seen["controller"] = kwargs["limits"]

        def attach_placement(self, planner: Any) -> None:
            pass

    webhooks = argparse.Namespace(rotator=None)  # no internal certificates to share

    def setup_webhooks(manager: Any, options: Any) -> argparse.Namespace:
        seen["webhooks"] = options.limits
        return webhooks

    monkeypatch.setattr(controller_module, "JobSetController", Controller)
    monkeypatch.setattr(gang_module, "GangController", lambda manager: None)
    monkeypatch.setattr(
        placement_setup, "add_placement_controllers", lambda m: argparse.Namespace(planner=None)
    )
    monkeypatch.setattr(webhooks_module, "setup_webhooks", setup_webhooks)
    args = build_parser().parse_args(
        ["controller", "--max-jobs-per-jobset", "10", "--max-pods-per-job", "7"]
    )
    manager = argparse.Namespace(options=ManagerOptions.from_args(args))  # only its options
    assert wiring.add_jobset_components(manager, args, 0) is webhooks
    assert seen == {"controller": Limits(10, 7), "webhooks": Limits(10, 7)}


def _request(js: dict[str, Any]) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u",
        operation="CREATE",
        kind={"group": c.GROUP, "version": c.VERSION, "kind": c.KIND},
        namespace=NS,
        name="js",
        object=js,
        old_object=None,
        dry_run=False,
    )


async def test_the_webhook_refuses_a_jobset_over_its_limits() -> None:
    hook = JobSetWebhook(None, limits=Limits(10, 100))
    denied = await hook.validate(_request(jobset(rjob("w", 11))))
    assert not denied.allowed and denied.status is not None
    assert denied.status["code"] == 422
    assert denied.status["message"] == f'JobSet.jobset.x-k8s.io "js" is invalid: {JOBS_ERROR}'
    assert (await hook.validate(_request(jobset(rjob("w", 10))))).allowed
    # The defaults: 100,000.
    assert (await JobSetWebhook(None).validate(_request(jobset(rjob("w", 11))))).allowed


async def test_a_stored_jobset_over_the_limits_fails_without_creating_jobs() -> None:
    """A JobSet stored while the webhook was bypassed: failed on the first pass, as one
    breaking any other rule, and none of its Jobs is created."""
    client = FakeClient()
    ctl = _controller(client)
    ctl.limits = Limits(10, 100)
    js = jobset(rjob("w", 11))
    ctl.jobsets.store.put(object_key(js), js)
    await ctl.reconcile(Request(NS, "js"))
    assert client.created == []
    (status,) = client.status_writes
    failed = next(x for x in status["conditions"] if x["type"] == c.CONDITION_FAILED)
    assert failed["reason"] == "ValidationFailed"
    assert failed["message"] == f'JobSet.jobset.x-k8s.io "js" is invalid: {JOBS_ERROR}'
