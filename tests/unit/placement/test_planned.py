"""The DomainPlanner: choice of domains, holdings from the cache, reservations, races."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.placement.planned import (
    Assignment,
    DomainPlanner,
    apply_assignment,
    wants_planned_placement,
)
from jobset.placement.strategy import DOMAIN_KEY, PRIORITY_ANNOTATION, STRATEGY_KEY
from jobset.runtime.cache import object_key
from jobset.runtime.client import JOBS
from tests.unit.placement.helpers import (
    NODES,
    POOL,
    a_jobset,
    finished,
    informer,
    job,
    node,
    owners,
    pools,
    stored,
)


def planner(
    nodes: list[dict[str, Any]], jobs: list[dict[str, Any]] | None = None, **kw: Any
) -> DomainPlanner:
    return DomainPlanner(informer(NODES, nodes), informer(JOBS, jobs), owners(), **kw)


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
    p = DomainPlanner(informer(NODES, nodes), jobs, owners())
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
    p = DomainPlanner(
        informer(NODES, pools(1)), jobs, owners(), wake=lambda ns, n: woken.append((ns, n))
    )
    j = job("a", 0)
    assert p.place(None, j)
    jobs.apply("ADDED", stored(j))
    assert p.assign(job("b", 0)) is None
    jobs.apply("MODIFIED", finished(stored(j)))
    assert woken == [("default", "b")]
    assert p.assign(job("b", 0)) is not None


def test_a_deleted_job_frees_its_domain() -> None:
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, pools(1)), jobs, owners())
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
    p = DomainPlanner(informer(NODES, pools(4)), jobs, owners())
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
    p = DomainPlanner(nodes, informer(JOBS), owners(), wake=lambda ns, n: woken.append((ns, n)))
    assert p.assign(job("a", 0)) is not None
    assert p.assign(job("b", 0)) is None
    nodes.apply("ADDED", node("new", "pool-new"))
    assert woken == [("default", "b")]
    got = p.assign(job("b", 0))
    assert got is not None and got.domain == "pool-new"


def planned_in(jobset: str, index: int, domain: str, **kw: Any) -> dict[str, Any]:
    j = job(jobset, index, **kw)
    apply_assignment(j, Assignment(POOL, domain, "0"))
    return j


def test_a_doubled_domain_costs_the_later_job_of_the_same_jobset() -> None:
    a0, a1 = planned_in("a", 0, "pool-0"), planned_in("a", 1, "pool-0")
    p = planner(
        pools(2), [stored(a0, when="2026-01-01T00:00:01Z"), stored(a1, when="2026-01-01T00:00:00Z")]
    )
    assert p.conflicts() == ["default/a-w-0"]
    assert p.loses_domain("default/a-w-0") and not p.loses_domain("default/a-w-1")


def test_an_older_job_of_another_jobset_never_costs_a_job_its_domain() -> None:
    victim = stored(planned_in("a", 0, "pool-0"), when="2026-01-02T00:00:00Z")
    older = stored(planned_in("b", 0, "pool-0"), when="2026-01-01T00:00:00Z")
    p = planner(pools(2), [victim, older])
    assert p.conflicts() == []
    assert not p.loses_domain("default/a-w-0")


def _no_owner(j: dict[str, Any]) -> None:
    j["metadata"].pop("ownerReferences")


def _owner_kind(j: dict[str, Any]) -> None:
    j["metadata"]["ownerReferences"][0]["kind"] = "Deployment"


def _owner_group(j: dict[str, Any]) -> None:
    j["metadata"]["ownerReferences"][0]["apiVersion"] = "evil.example.com/v1"


def _not_controller(j: dict[str, Any]) -> None:
    j["metadata"]["ownerReferences"][0]["controller"] = False


def _unknown_uid(j: dict[str, Any]) -> None:
    j["metadata"]["ownerReferences"][0]["uid"] = "made-up"


def _other_namespace(j: dict[str, Any]) -> None:
    # The victim's JobSet name and UID, claimed from the tenant's namespace.
    j["metadata"]["namespace"] = "tenant"


def _label_names_another(j: dict[str, Any]) -> None:
    j["metadata"]["labels"][c.JOBSET_NAME_KEY] = "b"


def _no_domain_annotation(j: dict[str, Any]) -> None:
    j["metadata"]["annotations"].pop(DOMAIN_KEY)


def _annotation_disagrees(j: dict[str, Any]) -> None:
    j["metadata"]["annotations"][DOMAIN_KEY] = "pool-1"


def _no_priority(j: dict[str, Any]) -> None:
    j["metadata"]["annotations"].pop(PRIORITY_ANNOTATION)


def _not_planned(j: dict[str, Any]) -> None:
    j["metadata"]["annotations"].pop(STRATEGY_KEY)


DECOYS = [
    pytest.param(_no_owner, id="no-owner-reference"),
    pytest.param(_owner_kind, id="owner-of-another-kind"),
    pytest.param(_owner_group, id="owner-of-another-api-group"),
    pytest.param(_not_controller, id="owner-not-controller"),
    pytest.param(_unknown_uid, id="owner-uid-unknown"),
    pytest.param(_other_namespace, id="owner-in-another-namespace"),
    pytest.param(_label_names_another, id="jobset-label-names-another"),
    pytest.param(_no_domain_annotation, id="no-domain-record"),
    pytest.param(_annotation_disagrees, id="record-disagrees-with-label"),
    pytest.param(_no_priority, id="no-priority-record"),
    pytest.param(_not_planned, id="not-planned"),
]


@pytest.mark.parametrize("forge", DECOYS)
def test_a_decoy_holds_no_domain_and_costs_no_job(forge: Callable[[Any], None]) -> None:
    """An old Job with the domain label that fails one trust check: the domain stays free,
    the victim's Job in it is never named for deletion, the decoy never enters holdings."""
    decoy = planned_in("a", 7, "pool-0")
    forge(decoy)
    victim = planned_in("a", 0, "pool-0")
    jobs = informer(JOBS, [stored(decoy, when="2020-01-01T00:00:00Z")])
    p = DomainPlanner(informer(NODES, pools(1)), jobs, owners())
    assert len(p.holdings) == 0
    assert p.holder(POOL, "0", "pool-0") == []
    got = p.assign(job("a", 0))
    assert got is not None and got.domain == "pool-0"
    jobs.apply("ADDED", stored(victim, uid="victim", when="2026-01-01T00:00:00Z"))
    assert p.holder(POOL, "0", "pool-0") == ["default/a-w-0"]
    assert not p.loses_domain("default/a-w-0")
    assert not p.loses_domain(object_key(decoy))
    assert p.conflicts() == []


def test_many_decoys_never_enter_the_holdings() -> None:
    """The per-event work is a lookup in holdings that decoys never enter, whatever their
    number; the planner still hands out every domain."""
    decoys = []
    for i in range(2000):
        d = planned_in("a", i, f"pool-{i % 4}", namespace="tenant")
        decoys.append(stored(d, when="2020-01-01T00:00:00Z"))
    jobs = informer(JOBS, decoys)
    p = DomainPlanner(informer(NODES, pools(4)), jobs, owners())
    assert len(p.holdings) == 0
    got = [p.assign(job("a", i)) for i in range(4)]
    assert sorted(a.domain for a in got if a is not None) == [f"pool-{i}" for i in range(4)]


def test_jobs_cached_before_their_jobset_hold_once_it_is_seen() -> None:
    held = stored(planned_in("late", 0, "pool-0"))
    jobsets = owners("a")
    p = DomainPlanner(informer(NODES, pools(1)), informer(JOBS, [held]), jobsets)
    assert p.holder(POOL, "0", "pool-0") == []
    jobsets.apply("ADDED", a_jobset("late"))
    assert p.holder(POOL, "0", "pool-0") == ["default/late-w-0"]
    assert p.assign(job("a", 0)) is None
    # A deleted JobSet's Jobs keep their domain until they are gone themselves.
    jobsets.apply("DELETED", a_jobset("late"))
    jobs_left = p.holder(POOL, "0", "pool-0")
    assert jobs_left == ["default/late-w-0"]


async def test_concurrent_reconciles_never_share_a_domain() -> None:
    """Many JobSets planning at once through a create path with random latency and a
    cache that shows each Job only after a random delay: no domain is ever given twice."""
    rng = random.Random(7)
    jobs = informer(JOBS)
    p = DomainPlanner(informer(NODES, pools(32, 1)), jobs, owners())
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
