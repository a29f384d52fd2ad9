"""The DomainPlanner: choice of domains, holdings from the cache, reservations, races."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from jobset.placement.planned import (
    Assignment,
    DomainPlanner,
    apply_assignment,
    wants_planned_placement,
)
from jobset.placement.strategy import DOMAIN_KEY
from jobset.runtime.client import JOBS
from tests.unit.placement.helpers import NODES, POOL, finished, informer, job, node, pools, stored


def planner(
    nodes: list[dict[str, Any]], jobs: list[dict[str, Any]] | None = None, **kw: Any
) -> DomainPlanner:
    return DomainPlanner(informer(NODES, nodes), informer(JOBS, jobs), **kw)


def test_each_job_gets_its_own_domain_until_none_is_left() -> None:
    p = planner(pools(4))
    got = [p.assign(job("a", i)) for i in range(5)]
    domains = [a.domain for a in got[:4] if a is not None]
    assert sorted(domains) == [f"pool-{i}" for i in range(4)]
    assert got[4] is None
    assert p.waiting() == {("default", "a")}


def test_assign_is_idempotent_per_job() -> None:
    p = planner(pools(4))
    first = p.assign(job("a", 0))
    again = p.assign(job("a", 0))
    assert first == again
    assert p.assignments == 1


def test_place_writes_the_node_selector_and_the_records() -> None:
    p = planner(pools(2))
    j = job("a", 0)
    assert p.place(None, j)
    domain = j["metadata"]["labels"][DOMAIN_KEY]
    assert j["spec"]["template"]["spec"]["nodeSelector"] == {POOL: domain}
    assert j["metadata"]["annotations"]["placement.jobset.x-k8s.io/priority"] == "0"
    assert (
        j["spec"]["template"]["metadata"]["annotations"]["placement.jobset.x-k8s.io/strategy"]
        == "planned"
    )


def test_jobs_of_other_strategies_are_left_alone() -> None:
    p = planner(pools(2))
    plain = job("a", 0, annotations={})
    plain["metadata"]["annotations"].pop("placement.jobset.x-k8s.io/strategy")
    assert not wants_planned_placement(None, plain)
    assert p.place(None, plain) and "nodeSelector" not in plain["spec"]["template"]["spec"]
    # The JobSet may ask for it instead of the template.
    assert wants_planned_placement(
        {"metadata": {"annotations": {"placement.jobset.x-k8s.io/strategy": "planned"}}}, plain
    )
    ns = job("b", 0, annotations={"alpha.jobset.sigs.k8s.io/node-selector": "true"})
    assert not wants_planned_placement(None, ns)


def test_holdings_come_from_the_job_cache_after_a_restart() -> None:
    nodes = pools(3)
    held = []
    for i in range(2):
        j = job("old", i)
        apply_assignment(j, Assignment(POOL, f"pool-{i}", "0"))
        held.append(stored(j))
    fresh = planner(nodes, held)  # a new process: nothing in memory, everything in the cache
    got = fresh.assign(job("new", 0))
    assert got is not None and got.domain == "pool-2"
    assert fresh.assign(job("new", 1)) is None


def test_a_reservation_covers_the_gap_until_the_cache_sees_the_job() -> None:
    nodes = pools(2)
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, nodes), jobs)
    j0 = job("a", 0)
    assert p.place(None, j0)
    # The cache has not seen the Job yet: the next assignment must not take its domain.
    a1 = p.assign(job("b", 0))
    assert a1 is not None and a1.domain != j0["metadata"]["labels"][DOMAIN_KEY]
    # The Job shows up: the reservation is replaced by the cached holding.
    jobs.apply("ADDED", stored(j0))
    assert "default/a-w-0" not in p._reservations
    assert p.assign(job("c", 0)) is None


def test_release_after_a_failed_create_frees_the_domain_and_wakes_waiters() -> None:
    woken: list[tuple[str, str]] = []
    p = planner(pools(1), wake=lambda ns, n: woken.append((ns, n)))
    assert p.assign(job("a", 0)) is not None
    assert p.assign(job("b", 0)) is None
    p.release("default", "a-w-0")
    assert woken == [("default", "b")]
    got = p.assign(job("b", 0))
    assert got is not None and got.domain == "pool-0"


def test_a_finished_job_frees_its_domain_and_wakes_waiters() -> None:
    woken: list[tuple[str, str]] = []
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, pools(1)), jobs, wake=lambda ns, n: woken.append((ns, n)))
    j = job("a", 0)
    assert p.place(None, j)
    jobs.apply("ADDED", stored(j))
    assert p.assign(job("b", 0)) is None
    jobs.apply("MODIFIED", finished(stored(j)))
    assert woken == [("default", "b")]
    assert p.assign(job("b", 0)) is not None


def test_a_deleted_job_frees_its_domain() -> None:
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, pools(1)), jobs)
    j = job("a", 0)
    assert p.place(None, j)
    jobs.apply("ADDED", stored(j))
    jobs.apply("DELETED", stored(j))
    assert p.assign(job("b", 0)) is not None


def test_exclusivity_is_per_priority() -> None:
    p = planner(pools(1))
    assert p.assign(job("low", 0, priority=0)) is not None
    high = p.assign(job("high", 0, priority=1000))
    assert high is not None and high.domain == "pool-0" and high.priority == "1000"
    assert p.assign(job("low2", 0, priority=0)) is None


def test_domains_must_fit_the_job_and_accept_its_pods() -> None:
    nodes = [
        node("small", "pool-small", cpu="2"),
        node(
            "tainted",
            "pool-tainted",
            cpu="64",
            taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}],
        ),
        node("down", "pool-down", cpu="64", ready=False),
        node("cordoned", "pool-cordoned", cpu="64", unschedulable=True),
        node("big-a", "pool-big", cpu="16"),
        node("big-b", "pool-big", cpu="16"),
        node("nolabel", None, cpu="64"),
    ]
    p = planner(nodes)
    # 8 pods x 3 CPU = only pool-big (5 + 5 pods) can hold them.
    got = p.assign(job("a", 0, pods=8, cpu="3"))
    assert got is not None and got.domain == "pool-big"
    # Tolerating the taint opens the tainted pool.
    tolerant = job(
        "b", 0, pods=8, cpu="3", pod_spec={"tolerations": [{"key": "gpu", "operator": "Exists"}]}
    )
    got = p.assign(tolerant)
    assert got is not None and got.domain == "pool-tainted"


def test_tightest_fit_keeps_big_domains_for_big_jobs() -> None:
    nodes = [node("a", "pool-a", cpu="4"), node("b", "pool-b", cpu="32")]
    p = planner(nodes)
    small = p.assign(job("small", 0, pods=2))
    assert small is not None and small.domain == "pool-a"
    big = p.assign(job("big", 0, pods=20))
    assert big is not None and big.domain == "pool-b"


def test_template_node_selector_restricts_domains() -> None:
    nodes = [
        node("a", "pool-a", labels={"gpu": "a100"}),
        node("b", "pool-b", labels={"gpu": "h100"}),
    ]
    p = planner(nodes)
    got = p.assign(job("a", 0, pod_spec={"nodeSelector": {"gpu": "h100"}}))
    assert got is not None and got.domain == "pool-b"


def test_a_recreated_job_returns_to_its_previous_domain() -> None:
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, pools(4)), jobs)
    j = job("a", 2)
    assert p.place(None, j)
    first = j["metadata"]["labels"][DOMAIN_KEY]
    jobs.apply("ADDED", stored(j))
    for i in range(2):
        assert p.place(None, job("other", i))
    jobs.apply("DELETED", stored(j))  # restarted: the Job is deleted and created again
    again = job("a", 2)
    assert p.place(None, again)
    assert again["metadata"]["labels"][DOMAIN_KEY] == first


def test_node_changes_invalidate_the_capacity_cache_and_wake_waiters() -> None:
    woken: list[tuple[str, str]] = []
    nodes = informer(NODES, pools(1))
    p = DomainPlanner(nodes, informer(JOBS), wake=lambda ns, n: woken.append((ns, n)))
    assert p.assign(job("a", 0)) is not None
    assert p.assign(job("b", 0)) is None
    nodes.apply("ADDED", node("new", "pool-new"))
    assert woken == [("default", "b")]
    got = p.assign(job("b", 0))
    assert got is not None and got.domain == "pool-new"


def test_conflicts_name_every_holder_but_the_first_created() -> None:
    a = job("a", 0)
    b = job("b", 0)
    for j in (a, b):
        j["metadata"]["labels"][DOMAIN_KEY] = "pool-0"
        j["metadata"]["annotations"]["placement.jobset.x-k8s.io/priority"] = "0"
    p = planner(
        pools(2), [stored(a, when="2026-01-01T00:00:01Z"), stored(b, when="2026-01-01T00:00:00Z")]
    )
    assert p.conflicts() == ["default/a-w-0"]


async def test_concurrent_reconciles_never_share_a_domain() -> None:
    """Many JobSets planning at once through a create path with random latency and a
    cache that shows each Job only after a random delay: no domain is ever given twice."""
    rng = random.Random(7)
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, pools(32, 1)), jobs)
    created: list[dict[str, Any]] = []
    rv = iter(range(10, 100000))

    async def create(j: dict[str, Any]) -> None:
        await asyncio.sleep(rng.random() * 0.01)  # the POST
        created.append(j)

        async def seen_later() -> None:
            await asyncio.sleep(rng.random() * 0.05)  # the watch event
            jobs.apply("ADDED", stored(j, rv=next(rv)))

        asyncio.get_running_loop().create_task(seen_later())

    async def reconcile(name: str, count: int) -> None:
        for i in range(count):
            await asyncio.sleep(rng.random() * 0.005)
            j = job(name, i)
            if p.place(None, j):
                await create(j)

    await asyncio.gather(*(reconcile(f"js{k}", 4) for k in range(12)))  # 48 Jobs, 32 domains
    await asyncio.sleep(0.1)
    domains = [j["metadata"]["labels"][DOMAIN_KEY] for j in created]
    assert len(domains) == 32
    assert len(set(domains)) == len(domains)
    assert len(p.waiting()) > 0
    assert p.conflicts() == []
