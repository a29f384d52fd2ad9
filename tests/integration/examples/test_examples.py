"""Every manifest in examples/ reaches the end state its header promises under `jobset dev`.

One `jobset dev` per group of examples that can share a cluster: the same
`# jobset-dev-flags:` and, for examples placing Jobs exclusively in node pools, a cluster
of their own (exclusive placement keeps a Job's pool free of every other JobSet's pods, so
a cluster busy with the other examples would only delay them). All examples are applied
at once, each into its own namespace, then each test waits for its example's
`# expect:` (and, after `# then-run:`, its `# then-expect:`), read back with kubectl, then
runs every command its comments name (`commands.py`): a reader who copies them gets what
they promise, not an error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jobset.dev.examplekit import (
    EXAMPLES_DIR,
    Example,
    Expectation,
    load_examples,
    observe,
    start_dev,
    unmet,
)
from kubesim.process import SimProcess

from .commands import check_commands, namespaced_kubeconfig

pytestmark = [pytest.mark.kubectl]

TIME_SCALE = "0.05"  # `sleep 60s` takes 3 s
WAIT_SECONDS = 150.0
SETTLE_SECONDS = 15.0  # after the JobSet finished, the rest (Jobs deleted, ...) follows by then

EXAMPLES = load_examples()

ClusterKey = tuple[tuple[str, ...], bool]


def _cluster_key(example: Example) -> ClusterKey:
    return example.dev_flags, example.expect.exclusive is not None


def _namespace(example: Example) -> str:
    return "ex-" + example.key


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[ClusterKey, SimProcess]]:
    keys = sorted({_cluster_key(e) for e in EXAMPLES})

    def start(key: ClusterKey) -> SimProcess:
        flags = list(key[0])
        if "--time-scale" not in flags:
            flags += ["--time-scale", TIME_SCALE]
        return start_dev(tmp_path_factory.mktemp("dev"), *flags)

    # The clusters start in threads, and pytest creates its base temporary directory on
    # first use without a lock: two threads both creating it made one's mktemp raise
    # ("dev is not a normalized and relative path") when this module ran first.
    tmp_path_factory.getbasetemp()
    started: dict[ClusterKey, SimProcess] = {}
    with ThreadPoolExecutor(len(keys)) as pool:
        futures = {key: pool.submit(start, key) for key in keys}
    try:
        for key, future in futures.items():
            started[key] = future.result()
        for example in EXAMPLES:
            dev = started[_cluster_key(example)]
            dev.kubectl("create", "namespace", _namespace(example))
            dev.kubectl(*example.apply_args(), "-n", _namespace(example))
        yield started
    finally:
        for future in futures.values():
            if future.exception() is None:
                future.result().stop()


def _wait_for(dev: SimProcess, example: Example, expect: Expectation, what: str) -> None:
    namespace = _namespace(example)

    def kubectl(*args: str) -> str:
        return dev.kubectl(*args).stdout

    deadline = time.monotonic() + WAIT_SECONDS
    problems: list[str] = []
    while time.monotonic() < deadline:
        seen = observe(kubectl, namespace, example.name, expect)
        problems = unmet(expect, seen)
        if not problems:
            return
        finished = seen.jobset is not None and (seen.jobset.get("status") or {}).get(
            "terminalState"
        )
        if finished:  # a finished JobSet changes no more: don't wait out the whole timeout
            deadline = min(deadline, time.monotonic() + SETTLE_SECONDS)
        time.sleep(0.5)
    jobset = dev.kubectl(
        "get", "jobset", example.name, "-n", namespace, "-o", "json", check=False
    ).stdout
    status = json.loads(jobset).get("status") if jobset.strip() else None
    logs = seen.logs[-3000:] if expect.logs else ""
    pytest.fail(
        f"{example.shown}: {what} `{expect}` not reached: "
        f"{'; '.join(problems)}\nJobSet status: {json.dumps(status, indent=1)}\n"
        f"pods' logs (tail):\n{logs}\n"
        f"jobset dev output (tail):\n{''.join(dev.output[-30:])}"
    )


def test_there_is_an_example_per_feature() -> None:
    names = {p.stem for p in EXAMPLES_DIR.glob("*.yaml")}
    names |= {p.parent.name for p in EXAMPLES_DIR.glob("*/jobset.yaml")}
    assert len(names) == len(EXAMPLES) >= 19
    assert "jax-train" in names
    states = {e.expect.state for e in EXAMPLES}
    assert states == {"Completed", "Failed", "Suspended", "deleted"}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.key)
def test_example_reaches_its_expected_state_and_its_commands_work(
    clusters: dict[ClusterKey, SimProcess], example: Example, tmp_path: Path
) -> None:
    dev = clusters[_cluster_key(example)]
    _wait_for(dev, example, example.expect, "expect")
    if example.then_run:
        assert example.then_expect is not None
        dev.kubectl(*example.then_run, "-n", _namespace(example))
        _wait_for(dev, example, example.then_expect, "then-expect")
    assert example.commands, f"{example.shown} names no command to run it"
    kubeconfig = namespaced_kubeconfig(dev.kubeconfig, _namespace(example), tmp_path)
    problems = check_commands(example, kubeconfig)
    assert not problems, f"{example.shown}: commands in its comments that do not work:\n" + (
        "\n".join(problems)
    )
