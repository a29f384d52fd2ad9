"""The namespace and context kubectl would use, from one or several kubeconfig files."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from jobset.sdk.kubeconfig import kubeconfig_files, kubeconfig_namespace, load_merged


def _write(path: Path, current: str | None, contexts: dict[str, str | None]) -> Path:
    cfg: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Config",
        "contexts": [
            {
                "name": name,
                "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})},
            }
            for name, ns in contexts.items()
        ],
    }
    if current is not None:
        cfg["current-context"] = current
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_first_file_setting_current_context_wins_and_contexts_merge_first_wins(
    tmp_path: Path,
) -> None:
    # a.yaml names the current context but defines it nowhere itself; b.yaml defines it and
    # names another current context (last-wins merging, kubernetes_asyncio's, would pick it).
    a = _write(tmp_path / "a.yaml", "team", {})
    b = _write(tmp_path / "b.yaml", "other", {"team": "ml", "other": "elsewhere"})
    env = {"KUBECONFIG": f"{a}{os.pathsep}{b}"}
    merged = load_merged(env=env)
    assert merged.current_context == "team"
    assert kubeconfig_namespace(env=env) == "ml"
    # A context defined in both files: the first file's definition.
    c = _write(tmp_path / "c.yaml", "", {"team": "first"})
    env = {"KUBECONFIG": os.pathsep.join(map(str, (c, a, b)))}
    assert kubeconfig_namespace(env=env) == "first"
    # --context picks a context of the merged set.
    assert kubeconfig_namespace(context="other", env=env) == "elsewhere"


def test_missing_files_empty_entries_and_no_namespace(tmp_path: Path) -> None:
    b = _write(tmp_path / "b.yaml", "plain", {"plain": None})
    env = {"KUBECONFIG": f"{tmp_path / 'missing.yaml'}{os.pathsep}{os.pathsep}{b}"}
    assert kubeconfig_files(env=env) == [str(b)]
    assert kubeconfig_namespace(env=env) == "default"
    # An explicit --kubeconfig is the only file read, $KUBECONFIG ignored.
    a = _write(tmp_path / "a.yaml", "team", {"team": "ml"})
    assert kubeconfig_namespace(str(b), env={"KUBECONFIG": str(a)}) == "default"
    assert kubeconfig_namespace(str(a), env={"KUBECONFIG": str(b)}) == "ml"


def test_in_a_pod_without_kubeconfig(tmp_path: Path) -> None:
    env = {
        "KUBECONFIG": str(tmp_path / "none.yaml"),
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "POD_NAMESPACE": "jobs",
    }
    assert kubeconfig_namespace(env=env) == "jobs"
