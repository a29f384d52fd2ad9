"""`kubectl jobset ...` through the real kubectl: the plugin, kubectl-style flags, the
namespace of a multi-file KUBECONFIG, and `jobset sim` interrupted while it starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jobset.sdk import leader_workers, multislice
from kubesim.process import SimProcess

pytestmark = [pytest.mark.kubectl]

BIN = Path(sys.executable).parent
LW = leader_workers("lw", image="busybox", workers=1).to_yaml()
MS = multislice("ms", image="busybox", slices=1, pods_per_slice=1).to_yaml()


def kubectl(
    kubeconfig: str, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    assert (BIN / "kubectl-jobset").exists(), "kubectl-jobset missing: pip install -e . again"
    env = {**os.environ, "KUBECONFIG": kubeconfig, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["kubectl", *args], input=input, capture_output=True, text=True, env=env, timeout=60
    )


def _team_kubeconfig(sim: SimProcess, tmp_path: Path, namespace: str) -> str:
    """KUBECONFIG=first:sim's: the first file sets current-context (a context defined only
    in it, with `namespace`); the sim's file sets another current-context."""
    sim_cfg = yaml.safe_load(sim.kubeconfig.read_text())
    ctx = dict(sim_cfg["contexts"][0]["context"], namespace=namespace)
    first = tmp_path / "first.yaml"
    first.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "team",
                "contexts": [{"name": "team", "context": ctx}],
            }
        )
    )
    return f"{first}{os.pathsep}{sim.kubeconfig}"


def test_kubectl_finds_the_plugin(sim_none: SimProcess) -> None:
    res = kubectl(str(sim_none.kubeconfig), "plugin", "list")
    assert str(BIN / "kubectl-jobset") in res.stdout, res.stdout + res.stderr


def test_plugin_commands_and_flags(sim_none: SimProcess, namespace: str, tmp_path: Path) -> None:
    kc = str(sim_none.kubeconfig)
    ns = ["-n", namespace]
    res = kubectl(kc, "jobset", "submit", "-f", "-", *ns, "--dry-run=server", input=LW)
    assert res.stdout == "jobset.jobset.x-k8s.io/lw created (server dry run)\n", res.stderr
    assert kubectl(kc, "jobset", "get", *ns, "-o", "name").stdout == ""
    # Flags before the sub-command, as `kubectl jobset -n NS submit` passes them.
    manifest = tmp_path / "ms.yaml"
    manifest.write_text(MS)
    res = kubectl(kc, "jobset", *ns, "submit", "-f", "-", "-f", str(manifest), input=LW)
    assert res.returncode == 0, res.stderr
    kubectl(kc, "label", "jobset", "ms", "team=ml", *ns)
    assert kubectl(kc, "jobset", "get", *ns, "-o", "name").stdout.split() == [
        "jobset.jobset.x-k8s.io/lw",
        "jobset.jobset.x-k8s.io/ms",
    ]
    res = kubectl(kc, "jobset", "get", *ns, "-o", "jsonpath={.items[*].metadata.name}")
    assert res.stdout == "lw ms\n", res.stderr
    res = kubectl(kc, "jobset", "get", *ns, "-l", "team=ml", "--no-headers")
    assert [line.split()[0] for line in res.stdout.splitlines()] == ["ms"]
    wide = kubectl(kc, "jobset", "get", *ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-3:] == ["RESTARTS", "EXCLUSIVE", "CONDITION"]
    one = json.loads(
        kubectl(kc, "jobset", "get", "lw", *ns, "-o", "json", "--request-timeout=10s").stdout
    )
    assert one["metadata"]["name"] == "lw"
    # logs, flags before it too (this cluster runs no pods: nothing to print).
    res = kubectl(kc, "jobset", *ns, "logs", "lw", "--replicated-job", "workers")
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    res = kubectl(kc, "jobset", "logs", "nope", *ns)
    assert res.returncode == 1 and '"nope" not found' in res.stderr, res.stderr
    # delete: --dry-run keeps it, -f deletes what a file names, --ignore-not-found, --all.
    res = kubectl(kc, "jobset", "delete", "lw", *ns, "--dry-run=server")
    assert res.stdout == 'jobset.jobset.x-k8s.io "lw" deleted (server dry run)\n', res.stderr
    assert "lw" in kubectl(kc, "jobset", "get", *ns, "-o", "name").stdout
    res = kubectl(kc, "jobset", "delete", *ns, "-f", str(manifest))
    assert res.stdout == 'jobset.jobset.x-k8s.io "ms" deleted\n', res.stderr
    missing = kubectl(kc, "jobset", "delete", "ms", *ns)
    assert missing.returncode == 1 and "not found" in missing.stderr
    assert kubectl(kc, "jobset", "delete", "ms", *ns, "--ignore-not-found").returncode == 0
    res = kubectl(kc, "jobset", "delete", "--all", *ns)
    assert res.stdout == 'jobset.jobset.x-k8s.io "lw" deleted\n', res.stderr


def test_namespace_of_a_multi_file_kubeconfig(
    sim_none: SimProcess, namespace: str, tmp_path: Path
) -> None:
    multi = _team_kubeconfig(sim_none, tmp_path, namespace)
    # kubectl itself resolves it so; the plugin must agree.
    view = kubectl(multi, "config", "view", "--minify", "-o", "jsonpath={..namespace}")
    assert view.stdout == namespace, view.stderr
    res = kubectl(multi, "jobset", "submit", "-", input=LW)
    assert res.returncode == 0, res.stderr
    assert (
        "lw"
        in kubectl(str(sim_none.kubeconfig), "get", "jobsets", "-n", namespace, "-o", "name").stdout
    )
    assert kubectl(multi, "jobset", "get", "-o", "name").stdout == "jobset.jobset.x-k8s.io/lw\n"
    # `--context` picks another merged context: the sim's own (namespace default).
    res = kubectl(multi, "jobset", "get", "--context", "jobset-sim", "-o", "name")
    assert res.returncode == 0 and "lw" not in res.stdout, res.stderr


def test_get_watch_prints_changes(sim_none: SimProcess, namespace: str) -> None:
    kc = str(sim_none.kubeconfig)
    assert kubectl(kc, "jobset", "submit", "-", "-n", namespace, input=LW).returncode == 0
    env = {**os.environ, "KUBECONFIG": kc, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    watch = subprocess.Popen(
        ["kubectl", "jobset", "get", "-w", "-n", namespace, "--request-timeout", "20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert watch.stdout is not None
    assert watch.stdout.readline().split()[0] == "NAME"
    assert watch.stdout.readline().split()[0] == "lw"
    kubectl(kc, "label", "jobset", "lw", "changed=yes", "-n", namespace)
    assert watch.stdout.readline().split()[0] == "lw"  # one line per change
    watch.send_signal(signal.SIGINT)
    assert watch.wait(timeout=30) in (0, 130)


def test_ctrl_c_while_sim_starts_exits_130(tmp_path: Path) -> None:
    # The child says "starting" from inside `jobset sim`'s runner (its own run_sim, wrapped
    # to print first), so the signal lands while the simulator starts. A marker printed
    # before calling main() raced the child: the signal could arrive between the print and
    # main's call, in the test's own code (a KeyboardInterrupt there is no product's).
    code = (
        "import sys, jobset.cli, jobset.dev.commands as dc\n"
        "start = dc.run_sim\n"
        "async def run_sim(args):\n"
        "    print('starting', flush=True)\n"
        "    return await start(args)\n"
        "dc.run_sim = run_sim\n"
        f"sys.exit(jobset.cli.main(['sim', '--kubeconfig', {str(tmp_path / 'kc')!r}]))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "starting\n"
    proc.send_signal(signal.SIGINT)  # before `ready`: sim is loading or starting
    out, err = proc.communicate(timeout=60)
    assert "ready" not in out, "the simulator was up before the signal: no start to interrupt"
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "unknown command" not in err
