"""The container image built from the Dockerfile by `make image` (tools/build_image.sh), checked.

Tier `make image-test` (marker `image`), not `make test`: on a fresh machine the image needs a
debootstrap of Debian (40-110 s, the Debian mirror), buildah, root, and pip with the package
index inside the build (25-60 s more). The tests fail, never skip, when the image is
missing. `tests/integration/deploy/conftest.py` deselects them unless `-m` names `image`.

What is checked, on the image itself (buildah's local storage):
- its config: user 65532:65532, entry point + command `jobset controller`;
- `jobset controller --help` runs as the image's user (buildah run with the image's config) and
  lists the flags the Deployment passes; the `sim` extra (and test/bench) is not installed;
- the Deployment's command line runs against a simulated cluster with the image's root
  filesystem read-only and only /tmp writable (the chart's securityContext and its emptyDir),
  as uid/gid 65532, in a runc container with no capabilities and in a plain chroot: it
  becomes ready, serves metrics, takes the lease, exits 0 on SIGTERM, and nothing in its log
  says it tried to write elsewhere. A write as root in the same setup fails with EROFS.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.process import free_port, start_sim
from tests.integration.deploy.helpers import CONFIG, REPO, eventually, http_get, scrape_install
from tests.logs import traceback_lines

pytestmark = [pytest.mark.image, pytest.mark.timeout(600), pytest.mark.kubectl]

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
IMAGE = os.environ.get("IMAGE", f"ghcr.io/jobset-py/jobset:{VERSION}")


def buildah(*args: str, timeout: float = 120) -> str:
    out = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"buildah {shlex.join(args)}: {out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    """The image's OCI config; fails (does not skip) when there is no image."""
    assert os.geteuid() == 0, "buildah's chroot isolation needs root"
    assert shutil.which("buildah"), "buildah is not installed: run `make image`"
    out = subprocess.run(
        ["buildah", "inspect", "--type", "image", IMAGE], capture_output=True, text=True
    )
    assert out.returncode == 0, f"no image {IMAGE} in buildah's storage: run `make image`"
    config: dict[str, Any] = json.loads(out.stdout)["OCIv1"]["config"]
    return config


@pytest.fixture
def container(image: dict[str, Any]) -> Iterator[str]:
    name = buildah("from", "--pull=never", IMAGE).strip()
    try:
        yield name
    finally:
        subprocess.run(["buildah", "rm", name], capture_output=True, timeout=60)


def _deployment_container() -> dict[str, Any]:
    manager = yaml.safe_load((CONFIG / "manager" / "manager.yaml").read_text())
    (c,) = manager["spec"]["template"]["spec"]["containers"]
    return dict(c)


def test_config_user_and_entrypoint(image: dict[str, Any]) -> None:
    assert image["User"] == "65532:65532"
    assert image["Entrypoint"] == ["jobset"] and image["Cmd"] == ["controller"]
    # The Deployment's command is the image's entry point + command.
    assert _deployment_container()["command"] == [*image["Entrypoint"], *image["Cmd"]]
    assert "PYTHONDONTWRITEBYTECODE=1" in image["Env"]


def test_help_runs_as_the_image_user(image: dict[str, Any], container: str) -> None:
    # buildah run takes the user, environment and working directory from the image's config.
    ident = buildah("run", "--isolation", "chroot", container, "--", "id")
    assert ident.startswith("uid=65532(nonroot) gid=65532(nonroot)"), ident
    out = subprocess.run(
        ["buildah", "run", "--isolation", "chroot", container, "--",
         *image["Entrypoint"], *image["Cmd"], "--help"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: jobset controller")
    flags = {a.split("=", 1)[0] for a in _deployment_container()["args"]}
    assert flags and all(f in out.stdout for f in flags), flags - set(out.stdout.split())


def test_only_runtime_dependencies(container: str) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[<>=!\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}

    extras = set().union(*(names(r) for r in project["optional-dependencies"].values()))
    script = "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] for d in m.distributions()))"
    installed = {
        n.lower().replace("_", "-")
        for n in buildah("run", "--isolation", "chroot", container, "--", "python", "-c", script).split()
    }  # fmt: skip
    assert "jobset-py" in installed
    assert names(project["dependencies"]) <= installed
    assert not (extras - names(project["dependencies"])) & installed  # no sim, test or bench extra


# The controller in the image's root filesystem, mounted read-only, two ways:
# - "runc": an OCI container, as the kubelet's runtime makes it for the chart's securityContext:
#   `root.readonly`, user 65532:65532, no capabilities at all, no_new_privs, runc's default
#   /proc, /dev, /sys; its own pid, ipc, uts and mount namespaces (the host's network, so the
#   kubeconfig's 127.0.0.1 reaches the simulator);
# - "chroot": a private mount namespace (unshare) with the rootfs bind-mounted read-only and
#   `chroot --userspec=65532:65532`, what buildah's chroot isolation does.
# Either way only /tmp is writable (a host directory, as the Deployment's emptyDir is), and the
# kubeconfig is on a read-only mount at /run (as a Secret volume would be).
CHROOT = r"""
set -eu
R=$1; shift
mount --bind "$ROOTFS" "$R"
mount -o remount,bind,ro "$R"
mount --bind "$EMPTYDIR" "$R/tmp"
mount -t tmpfs -o mode=755,size=1m tmpfs "$R/dev"
for d in null zero random urandom; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
mount -t proc proc "$R/proc"
mount --bind -o ro "$SECRETS" "$R/run"
mount -o remount,bind,ro "$R/run"
if [ "$1" = --probe ]; then shift; exec chroot "$R" "$@"; fi
exec chroot --userspec=65532:65532 "$R" /usr/bin/env -i "$@"
"""
PROBE = ["/bin/sh", "-c", ": > /opt/jobset/probe"]  # as root: only a read-only mount stops it


class Runner:
    def __init__(self, kind: str, tmp: Path, rootfs: str, secrets: Path, emptydir: Path) -> None:
        self.kind, self.tmp, self.rootfs = kind, tmp, rootfs
        self.secrets, self.emptydir = secrets, emptydir
        self.ids: list[str] = []

    def popen(
        self, argv: list[str], env: list[str], out: Any, *, probe: bool = False
    ) -> subprocess.Popen[bytes]:
        if self.kind == "chroot":
            mnt = Path(tempfile.mkdtemp(dir=self.tmp))
            inner = ["--probe", *argv] if probe else [*env, *argv]
            return subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private",
                 "sh", "-c", CHROOT, "sh", str(mnt), *inner],
                env={"PATH": os.environ["PATH"], "ROOTFS": self.rootfs,
                     "SECRETS": str(self.secrets), "EMPTYDIR": str(self.emptydir)},
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        bundle = Path(tempfile.mkdtemp(dir=self.tmp))
        subprocess.run(["runc", "spec", "--bundle", str(bundle)], check=True, timeout=30)
        spec = json.loads((bundle / "config.json").read_text())
        spec["root"] = {"path": self.rootfs, "readonly": True}
        spec["process"].update(
            terminal=False, args=argv, env=env, cwd="/", noNewPrivileges=True,
            user={"uid": 0, "gid": 0} if probe else {"uid": 65532, "gid": 65532},
            capabilities={k: [] for k in ("bounding", "effective", "permitted", "ambient")},
        )  # fmt: skip
        spec["linux"]["namespaces"] = [
            n for n in spec["linux"]["namespaces"] if n["type"] != "network"
        ]
        spec["mounts"] += [
            {"destination": "/tmp", "type": "bind", "source": str(self.emptydir),
             "options": ["rbind", "rw", "nosuid", "nodev"]},
            {"destination": "/run", "type": "bind", "source": str(self.secrets),
             "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]},
        ]  # fmt: skip
        (bundle / "config.json").write_text(json.dumps(spec))
        cid = f"jobset-image-test-{os.getpid()}-{len(self.ids)}"
        self.ids.append(cid)
        return subprocess.Popen(
            ["runc", "run", "--bundle", str(bundle), cid], stdout=out, stderr=subprocess.STDOUT
        )

    def cleanup(self) -> None:
        for cid in self.ids:
            subprocess.run(["runc", "delete", "--force", cid], capture_output=True, timeout=30)


def _inline(kubeconfig: Path) -> str:
    """The kubeconfig with every referenced file inlined (no host path exists in the chroot)."""
    doc = yaml.safe_load(kubeconfig.read_text())
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for item in doc.get(section, []):
            body = item[key]
            for field in ("certificate-authority", "client-certificate", "client-key"):
                if field in body:
                    body[f"{field}-data"] = base64.b64encode(
                        Path(body.pop(field)).read_bytes()
                    ).decode()
    return yaml.safe_dump(doc)


@pytest.mark.parametrize("kind", ["runc", "chroot"])
def test_controller_runs_with_a_read_only_root(
    kind: str, image: dict[str, Any], container: str, tmp_path: Path
) -> None:
    if kind == "runc":
        assert shutil.which("runc"), "runc is not installed: run `make image`"
    rootfs = buildah("mount", container).strip()
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    emptydir = tmp_path / "emptydir"
    emptydir.mkdir()
    os.chmod(emptydir, 0o1777)
    runner = Runner(kind, tmp_path, rootfs, secrets, emptydir)
    sim = start_sim(tmp_path, "--sim-level", "none")
    proc: subprocess.Popen[bytes] | None = None
    try:
        # The proof that the root is read-only, not merely unwritable to uid 65532: root fails.
        probe_log = tmp_path / "probe.log"
        with probe_log.open("w") as out:
            probe = runner.popen(PROBE, ["PATH=/usr/bin:/bin"], out, probe=True)
            assert probe.wait(timeout=60) != 0
        assert "Read-only file system" in probe_log.read_text(), probe_log.read_text()

        sim.kubectl("apply", "--server-side", "-k", str(CONFIG / "install"), timeout=120)
        (secrets / "kubeconfig").write_text(_inline(sim.kubeconfig))
        os.chmod(secrets / "kubeconfig", 0o444)
        deployment = _deployment_container()
        ports = {"metrics": free_port(), "health": free_port(), "webhook": free_port()}
        args = [
            re.sub(
                r"^--(metrics|health|webhook)-port=\d+$",
                lambda m: f"--{m[1]}-port={ports[m[1]]}",
                a,
            )
            for a in deployment["args"]
        ]
        env = [*image["Env"], "HOME=/nonexistent", "POD_NAMESPACE=jobset-system"]
        command = [*deployment["command"], *args, "--kubeconfig=/run/kubeconfig",
                   "--bind-address=127.0.0.1"]  # fmt: skip
        log = tmp_path / "controller.log"
        with log.open("w") as out:
            proc = runner.popen(command, env, out)

            def ready() -> bool:
                assert proc is not None and proc.poll() is None, log.read_text()
                return http_get(f"http://127.0.0.1:{ports['health']}/readyz")[0] == 200

            eventually(ready, within=90, interval=0.3)
            status, metrics = scrape_install(sim, ports["metrics"])  # secure by default
            assert status == 200 and "controller_runtime_reconcile_total" in metrics
            lease = sim.kubectl("get", "lease", "jobset-controller-leader", "-n", "jobset-system",
                                "-o", "jsonpath={.spec.holderIdentity}")  # fmt: skip
            assert lease.stdout
            proc.terminate()  # runc forwards it to the container's process
            code = proc.wait(timeout=60)
        text = log.read_text()
        assert code == 0, text
        assert "injected caBundle" in text, text
        for sign in ("Read-only file system", "Permission denied"):
            assert sign not in text, text
        assert not traceback_lines(text), text
        # What it wrote in /tmp, the one writable place, is its own (uid 65532).
        written = sorted(emptydir.rglob("*"))
        assert all(f.stat().st_uid == 65532 for f in written), written
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        runner.cleanup()
        sim.stop()
        subprocess.run(["buildah", "umount", container], capture_output=True, timeout=60)
