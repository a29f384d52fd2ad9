"""The in-process scheduler microbenchmark places every pod, reproducibly per seed."""

from __future__ import annotations

from benchmarks import sched_micro


def test_every_pod_is_placed_and_the_digest_is_reproducible() -> None:
    first = sched_micro.run(400, seed=3)
    again = sched_micro.run(400, seed=3)
    other = sched_micro.run(400, seed=4)
    assert (first["pods"], first["placed"], first["nodes"]) == (400, 400, 63)
    assert first["placement_digest"] == again["placement_digest"]
    assert first["placement_digest"] != other["placement_digest"]
    assert first["cpu_ms_per_pod"] > 0


def test_pods_look_like_the_job_controllers() -> None:
    pod = sched_micro.job_pod(3, 5)
    labels = pod["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-completion-index"] == "5"
    assert labels["jobset.sigs.k8s.io/job-index"] == "3"
    assert {t["key"] for t in pod["spec"]["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
