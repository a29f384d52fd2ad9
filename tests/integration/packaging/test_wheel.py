"""The wheels a user installs work outside the source checkout.

Three distributions come from this tree: the controller, `jobset-py`, built from exactly
what the Dockerfile copies (so the image and this test see the same build context);
`jobset-kubeutil`, the helpers it shares with the simulator, from the same context; and the
simulator, `kubesim` (packaging/kubesim). Each is built with `pip wheel --no-deps` and
installed into a fresh venv in a temporary directory, the pins between them resolved to
these wheels and every other dependency from the package registry (about 30 s a venv).
Every command runs from a directory outside the checkout with PYTHONPATH unset, so nothing
can come from `src/`.

Checked: no two wheels own a file, and the controller's has no simulator module; the
Dockerfile's build step (`jobset controller --help`) without the `[sim]` extra, and `jobset
dev` then saying in one line which extra to install; with the extra (which brings the
kubesim wheel): the CRD and the examples inside the installed package are the files of
config/crd/bases and examples/ (they are symlinks in src/jobset/data, which the build must
resolve), `jobset dev` runs an example, read from the installed package, to the end state its
header promises, and the README's quick start runs as written (but for `make`); and the
kubesim wheel alone (no controller) serves a cluster with `kubesim serve`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobset.dev.examplekit import load_example, observe, unmet
from kubesim.process import spawn_until_ready
from tests.integration.quickstart.test_readme import quickstart_blocks, session_script
from tests.processgroup import own_group
from tests.wheel import REPO, build_sim_wheel, build_wheel, install, run

pytestmark = [pytest.mark.wheel, pytest.mark.timeout(600), pytest.mark.kubectl]

EXAMPLE = "simple.yaml"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory outside the checkout, and an environment that cannot reach `src/`."""
    tmp = tmp_path_factory.mktemp("wheel")
    assert REPO not in tmp.parents
    with pytest.MonkeyPatch.context() as mp:
        for var in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
            mp.delenv(var, raising=False)
        yield tmp


@pytest.fixture(scope="module")
def wheel(outside: Path) -> Path:
    return build_wheel(outside)


@pytest.fixture(scope="module")
def venv(outside: Path, wheel: Path) -> Path:
    """A fresh venv with the wheel and its runtime dependencies only (no extras)."""
    return install(outside / "venv", wheel)


def test_runtime_install_serves_the_image_entry_point_without_the_sim_extra(
    outside: Path, venv: Path
) -> None:
    jobset = venv / "bin" / "jobset"
    where = run(venv / "bin" / "python", "-c", "import jobset; print(jobset.__file__)", cwd=outside)
    assert Path(where.stdout.strip()).is_relative_to(venv)
    # The Dockerfile's build check.
    assert run(jobset, "controller", "--help", cwd=outside).stdout.startswith("usage: jobset")
    for command in ("sim", "dev"):
        result = subprocess.run(
            [jobset, command, "--kubeconfig", str(outside / "kubeconfig")],
            capture_output=True,
            text=True,
            cwd=outside,
            timeout=60,
        )
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert "pip install 'jobset-py[sim]'" in line


@pytest.fixture(scope="module")
def sim_wheel(outside: Path, wheel: Path) -> Path:
    """The kubesim wheel, beside the controller's (`wheel` first: it makes `dist`)."""
    return build_sim_wheel(outside)


@pytest.fixture(scope="module")
def sim_venv(outside: Path, venv: Path, wheel: Path, sim_wheel: Path) -> Path:
    """The same venv with the `[sim]` extra added: the kubesim wheel and its dependencies."""
    pip = (venv / "bin" / "python", "-m", "pip", "install", "-q", "--find-links", wheel.parent)
    run(*pip, f"{wheel}[sim]", cwd=outside, timeout=600)
    return venv


def _wheel_files(wheel: Path) -> set[str]:
    """What the wheel installs, but its own metadata directory."""
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if ".dist-info/" not in n}


def test_no_two_wheels_own_a_file_and_the_controller_has_no_simulator(
    wheel: Path, sim_wheel: Path
) -> None:
    (kubeutil,) = wheel.parent.glob("jobset_kubeutil-*.whl")
    files = {w.name: _wheel_files(w) for w in (wheel, kubeutil, sim_wheel)}
    tops = {name: {f.split("/")[0] for f in fs} for name, fs in files.items()}
    assert tops == {
        wheel.name: {"jobset"},
        kubeutil.name: {"kubeutil"},
        sim_wheel.name: {"kubesim"},
    }
    assert "kubesim/cli.py" in files[sim_wheel.name]
    assert "kubeutil/tls.py" in files[kubeutil.name]


def test_kubesim_alone_serves_a_cluster(outside: Path, sim_wheel: Path) -> None:
    """`pip install kubesim`, no controller: `kubesim serve` is the server `jobset sim` runs."""
    alone = install(outside / "kubesim-venv", sim_wheel)
    python = alone / "bin" / "python"
    assert not (alone / "bin" / "jobset").exists()
    found = run(
        python, "-c", "import importlib.util as u; print(u.find_spec('jobset'))", cwd=outside
    )
    assert found.stdout.strip() == "None"
    kubeconfig = outside / "kubesim.kubeconfig"
    proc, output, _ = spawn_until_ready(
        [str(alone / "bin" / "kubesim"), "serve", "--kubeconfig", str(kubeconfig)],
        "kubesim serve ready",
        timeout=120,
        cwd=outside,
    )
    try:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        nodes = subprocess.run(
            ["kubectl", "get", "nodes", "-o", "name"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert nodes.returncode == 0 and nodes.stdout.split() == ["node/pool-0-node-0"], nodes
        version = subprocess.run(
            ["kubectl", "get", "--raw", "/version"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert version.returncode == 0, version.stderr
    finally:
        proc.terminate()
        code = proc.wait(timeout=60)
    assert code == 0, "".join(output[-30:])
    assert any("kubesim serve stopped" in line for line in output)


def _package_data(venv: Path, outside: Path) -> tuple[Path, Path]:
    out = run(
        venv / "bin" / "python",
        "-c",
        "import jobset.data as d; print(d.CRD_DIR); print(d.EXAMPLES_DIR)",
        cwd=outside,
    ).stdout.split()
    return Path(out[0]), Path(out[1])


def test_installed_package_data_is_the_source_files(outside: Path, sim_venv: Path) -> None:
    crd_dir, examples_dir = _package_data(sim_venv, outside)
    for installed, source in (
        (crd_dir, REPO / "config" / "crd" / "bases"),
        (examples_dir, REPO / "examples"),
    ):
        assert installed.is_relative_to(sim_venv) and not installed.is_symlink()
        files = _files(source)  # directory examples (examples/jax-train) included
        assert _files(installed) == files
        for name in files:
            assert (installed / name).read_bytes() == (source / name).read_bytes(), name


def _files(top: Path) -> list[str]:
    return sorted(
        str(p.relative_to(top))
        for p in top.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def test_jobset_dev_from_the_wheel_runs_an_example_to_completion(
    outside: Path, sim_venv: Path
) -> None:
    _, examples_dir = _package_data(sim_venv, outside)
    example = load_example(examples_dir / EXAMPLE)
    kubeconfig = outside / "dev.kubeconfig"
    proc, output, _ = spawn_until_ready(
        [
            str(sim_venv / "bin" / "jobset"),
            "dev",
            "--kubeconfig",
            str(kubeconfig),
            "--time-scale",
            "0.05",
            "--log-level",
            "WARNING",
            *example.dev_flags,
        ],
        "jobset dev ready",
        timeout=120,
        cwd=outside,
    )
    try:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

        def kubectl(*args: str) -> str:
            result = subprocess.run(
                ["kubectl", *args], capture_output=True, text=True, env=env, timeout=60
            )
            assert result.returncode == 0, f"kubectl {args}: {result.stderr}"
            return result.stdout

        kubectl(*example.apply_args(), "-n", "default")
        deadline = time.monotonic() + 120
        problems: list[str] = ["not observed yet"]
        while problems and time.monotonic() < deadline:
            problems = unmet(
                example.expect, observe(kubectl, "default", example.name, example.expect)
            )
            time.sleep(0.5)
        assert not problems, f"{problems}\n{''.join(output[-30:])}"
    finally:
        proc.terminate()
        code = proc.wait(timeout=60)
    assert code == 0, "".join(output[-30:])
    assert any("jobset dev stopped" in line for line in output)


def test_readme_quick_start_runs_from_the_wheels(outside: Path, sim_venv: Path) -> None:
    """The README's quick-start blocks as a user of the installed wheels runs them: the venv
    activated instead of `make venv`, `make demo` (a checkout's target) left out, the files
    the blocks write under this test's directory instead of /tmp."""
    blocks = [
        b for b in quickstart_blocks((REPO / "README.md").read_text()) if "make demo" not in b.text
    ]
    assert any("jobset dev" in b.text for b in blocks)
    script = session_script(blocks).replace("/tmp/", f"{outside}/")
    script = script.replace(
        "make venv && source .venv/bin/activate", f"source {sim_venv}/bin/activate"
    )
    assert "make " not in script
    shutil.copytree(REPO / "examples", outside / "examples", dirs_exist_ok=True)
    (outside / "quickstart.sh").write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "VIRTUAL_ENV")}
    log_path = outside / "quickstart.log"
    with (
        log_path.open("w") as log,
        own_group(
            ["bash", str(outside / "quickstart.sh")],
            cwd=outside,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        ) as proc,
    ):
        code = proc.wait(timeout=300)
    out = log_path.read_text()
    assert code == 0 and ">>> quickstart done" in out, out[-6000:]
    assert "JobSet simple Completed" in out and "hello: Completed" in out, out[-6000:]


def test_wheel_metadata_names_this_project_and_ships_its_license(wheel: Path) -> None:
    """What a package index shows: the distribution name of this project's own (not
    upstream's SDK `jobset`), its license file, classifiers, keywords and URLs."""
    from email.parser import Parser

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(zf.read(meta_name).decode())
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert meta["Name"] == "jobset-py"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE"
    assert "Typing :: Typed" in meta.get_all("Classifier", [])
    assert "kubernetes" in (meta["Keywords"] or "").split(",")
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL", []))
    assert {"Homepage", "Source", "Changelog", "Issues"} <= urls.keys(), urls
    assert meta["Author"] == "jobset-py maintainers"
