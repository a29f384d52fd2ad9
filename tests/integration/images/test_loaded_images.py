"""Loaded images end to end: `jobset sim --load-image`, `jobset sim load-image`, and pods of
them through the real kubectl.

A tiny image is built here without network (busybox-static in an umoci layout, with an
Entrypoint, Cmd, Env and WorkingDir; `tests/images.py`), loaded at start as an oci-archive
and into the running simulator as a docker-archive. Its pod runs its own Cmd in its own root
and does not see the host's files; `kubectl exec`, `cp`, `attach`, `logs -f` and
`port-forward` work on it. References of the loaded repository that are not loaded fail to
pull as on kind, and images of simulated programs are left alone. Needs root, as real pods do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.images.store import CACHE_ENV
from kubesim.process import SimProcess, free_port, start_sim
from tests.eventually import eventually_sync
from tests.images import MARKER, TinyImage, tiny_image

pytestmark = [pytest.mark.kubectl]

V1 = "example.com/tiny:v1"
V2 = "example.com/tiny:v2"
TICKER = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done"


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> tuple[TinyImage, TinyImage]:
    v1 = tiny_image(tmp_path_factory.mktemp("v1"), name=V1)
    v2 = tiny_image(tmp_path_factory.mktemp("v2"), name=V2, cmd=(TICKER,))
    return v1, v2


@pytest.fixture(scope="module", autouse=True)
def image_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The simulators' cache of unpacked images, this module's own (not the user's)."""
    cache = tmp_path_factory.mktemp("image-cache")
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(cache)
    try:
        yield cache
    finally:
        if before is None:
            del os.environ[CACHE_ENV]
        else:
            os.environ[CACHE_ENV] = before


@pytest.fixture(scope="module")
def sim(
    images: tuple[TinyImage, TinyImage], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SimProcess]:
    s = start_sim(
        tmp_path_factory.mktemp("sim"), "--load-image", str(images[0].oci_archive),
        "--time-scale", "0.1",
    )  # fmt: skip
    try:
        yield s
    finally:
        s.stop()


def load_image(kubeconfig: Path, *archives: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobset.cli", "sim", "load-image", *map(str, archives),
         "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def pod(name: str, image: str, **container: Any) -> str:
    spec = {"terminationGracePeriodSeconds": 1, **container.pop("pod_spec", {})}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {**spec, "containers": [{"name": "main", "image": image, **container}]},
    }
    return json.dumps(body)


def get_pod(sim: SimProcess, name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(sim.kubectl("get", "pod", name, "-o", "json").stdout)
    return out


def running(p: dict[str, Any]) -> bool:
    return (p.get("status") or {}).get("phase") == "Running"


def waiting_reason(p: dict[str, Any]) -> str:
    for cs in (p.get("status") or {}).get("containerStatuses") or []:
        return str(((cs.get("state") or {}).get("waiting") or {}).get("reason") or "")
    return ""


def start(sim: SimProcess, name: str, image: str, **container: Any) -> None:
    sim.kubectl("apply", "-f", "-", input=pod(name, image, **container))
    eventually_sync(lambda: get_pod(sim, name), running, within=60, what=f"{name} running")


def events_of(sim: SimProcess, name: str) -> list[tuple[str, str]]:
    out = sim.kubectl("get", "events", "--field-selector", f"involvedObject.name={name}",
                      "-o", "json").stdout  # fmt: skip
    return [(e["reason"], e["message"]) for e in json.loads(out)["items"]]


def test_load_image_into_the_running_cluster(sim: SimProcess, images: Any) -> None:
    done = load_image(sim.kubeconfig, images[1].docker_archive)
    assert done.returncode == 0, done.stderr
    assert f"loaded {V2} (sha256:" in done.stdout
    listed = json.loads(sim.kubectl("get", "--raw", "/debug/images").stdout)
    assert {i["name"] for i in listed["images"]} == {V1, V2}
    start(sim, "second", V2)  # its own Cmd: the ticker
    eventually_sync(lambda: sim.kubectl("logs", "second").stdout, lambda t: "tick 1" in t)


def test_a_loaded_images_pod_runs_its_own_cmd_in_its_own_root(sim: SimProcess) -> None:
    secrets = []
    for directory in ("/tmp", "/var/tmp"):
        planted = Path(directory) / f"host-secret-{uuid.uuid4().hex}"
        planted.write_text("host\n")
        secrets.append(planted)
    try:
        start(sim, "own-root", V1)
        logs = eventually_sync(
            lambda: sim.kubectl("logs", "own-root").stdout, lambda t: MARKER in t
        )
        assert "cwd=/srv greeting=from-image" in logs
        for planted in secrets:
            seen = sim.kubectl("exec", "own-root", "--", "cat", str(planted), check=False)
            assert seen.returncode != 0 and "host" not in seen.stdout
        passwd = sim.kubectl("exec", "own-root", "--", "cat", "/etc/passwd").stdout
        assert passwd.startswith("root:x:0:0:root:/root:/bin/sh\napp:x:1000")
        listing = sim.kubectl("exec", "own-root", "--", "ls", "/").stdout.split()
        assert "srv" in listing and "home" not in listing and "usr" not in listing
        env = sim.kubectl("exec", "own-root", "--", "env").stdout
        assert "GREETING=from-image" in env
    finally:
        for planted in secrets:
            planted.unlink()


def test_exec_cp_attach_logs_follow_and_port_forward(sim: SimProcess, tmp_path: Path) -> None:
    start(sim, "ticker", V1, command=["sh", "-c", TICKER])
    assert sim.kubectl("exec", "ticker", "--", "cat", "/srv/marker").stdout == MARKER + "\n"
    assert sim.kubectl("exec", "ticker", "--", "pwd").stdout == "/srv\n"
    # cp both ways (tar through exec, the image's busybox tar)
    sim.kubectl("cp", "ticker:/srv/marker", str(tmp_path / "marker"))
    assert (tmp_path / "marker").read_text() == MARKER + "\n"
    (tmp_path / "up").write_text("uploaded\n")
    sim.kubectl("cp", str(tmp_path / "up"), "ticker:/tmp/up")
    assert sim.kubectl("exec", "ticker", "--", "cat", "/tmp/up").stdout == "uploaded\n"
    # logs -f and attach: the Cmd's own output, as it comes
    for verb in (["logs", "-f", "ticker"], ["attach", "ticker"]):
        follow = subprocess.Popen(
            ["kubectl", "--kubeconfig", str(sim.kubeconfig), *verb],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert follow.stdout is not None
            lines = [follow.stdout.readline() for _ in range(2)]
            assert all(line.startswith("tick ") for line in lines), lines
        finally:
            follow.kill()
            follow.wait()
    # port-forward to a server in the image (busybox httpd serving the image's /srv)
    start(sim, "server", V1, command=["httpd", "-f", "-p", "8080", "-h", "/srv"])
    port = free_port()
    forward = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(sim.kubeconfig), "port-forward", "pod/server",
         f"{port}:8080"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert forward.stdout is not None and "Forwarding from" in forward.stdout.readline()
        body = eventually_sync(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/marker", timeout=5).read(),
            retry_on=(OSError,),
        )
        assert body.decode() == MARKER + "\n"
    finally:
        forward.kill()
        forward.wait()


def test_references_not_loaded_fail_to_pull_as_on_kind(sim: SimProcess) -> None:
    sim.kubectl("apply", "-f", "-", input=pod("absent", "example.com/tiny:v9"))
    # ErrImagePull lasts until the next sync (a tenth of a second at this time scale), then
    # ImagePullBackOff for the back-off: the events keep what the status shows only briefly.
    eventually_sync(lambda: waiting_reason(get_pod(sim, "absent")), "ImagePullBackOff".__eq__)
    reasons = {r for r, _ in events_of(sim, "absent")}
    assert {"Pulling", "Failed", "BackOff"} <= reasons
    failed = [m for r, m in events_of(sim, "absent") if r == "Failed"]
    assert any(m.startswith('Failed to pull image "example.com/tiny:v9": ') for m in failed)
    assert "Error: ErrImagePull" in failed
    sim.kubectl("apply", "-f", "-",
                input=pod("never", "example.com/tiny:v9", imagePullPolicy="Never"))  # fmt: skip
    status = eventually_sync(
        lambda: get_pod(sim, "never"), lambda p: waiting_reason(p) == "ErrImageNeverPull"
    )
    waiting = status["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["message"] == (
        'Container image "example.com/tiny:v9" is not present with pull policy of Never'
    )
    assert status["status"]["phase"] == "Pending"


def test_images_of_simulated_programs_are_left_alone(sim: SimProcess) -> None:
    sim.kubectl("apply", "-f", "-", input=pod("simulated", "busybox:1.36", command=["sleep", "1000s"],
                                              imagePullPolicy="Never"))  # fmt: skip
    eventually_sync(lambda: get_pod(sim, "simulated"), running)
    assert ("Pulled", 'Container image "busybox:1.36" already present on machine') in events_of(
        sim, "simulated"
    )


def test_load_image_refusals(sim: SimProcess, tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"\0" * 4096)
    done = load_image(sim.kubeconfig, junk)
    assert done.returncode == 1
    assert "not a docker-archive" in done.stderr or "no manifest.json" in done.stderr, done.stderr
    missing = load_image(sim.kubeconfig, tmp_path / "nope.tar")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    # Anyone but the admin is refused, before the body is read.
    token = sim.kubectl("create", "token", "default").stdout.strip()
    config = yaml.safe_load(sim.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    other = tmp_path / "sa.kubeconfig"
    other.write_text(yaml.safe_dump(config))
    refused = load_image(other, junk)
    assert refused.returncode == 1 and "forbidden" in refused.stderr.lower(), refused.stderr


def test_a_bad_archive_at_start_is_one_line_and_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"\0" * 4096)
    done = subprocess.run(
        [sys.executable, "-m", "jobset.cli", "sim", "--kubeconfig", str(tmp_path / "kc"),
         "--load-image", str(junk)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"jobset sim: {junk}: neither"), (
        done.stderr
    )
    missing = subprocess.run(
        [sys.executable, "-m", "jobset.cli", "sim", "--kubeconfig", str(tmp_path / "kc"),
         "--load-image", str(tmp_path / "nope.tar")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (
        missing.returncode == 2
        and "--load-image" in missing.stderr
        and "no such file" in missing.stderr
    )
