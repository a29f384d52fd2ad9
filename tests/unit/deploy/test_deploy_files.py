"""Deploy files that need no process: the dashboard, the rules, the Dockerfile, the docs."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "jobset"
RULES = CHART / "files" / "prometheus-rules.yaml"
DASHBOARD = CHART / "files" / "dashboards" / "jobset-controller.json"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_dashboard", REPO / "tools" / "gen_dashboard.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while executing it
    spec.loader.exec_module(module)
    return module


def _board() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def test_dashboard_is_generated() -> None:
    assert DASHBOARD.read_text() == _generator().render(), (
        "stale dashboard: run .venv/bin/python tools/gen_dashboard.py"
    )


def test_dashboard_has_the_panels_operators_need() -> None:
    board = _board()
    panels = [p for p in board["panels"] if p["type"] != "row"]
    exprs = " ".join(t["expr"] for p in panels for t in p["targets"])
    for metric in (
        "controller_runtime_reconcile_total",  # reconcile rate
        "controller_runtime_reconcile_errors_total",  # errors
        "controller_runtime_reconcile_time_seconds_bucket",  # latency
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "jobset_jobsets",  # JobSets by phase
        "jobset_completed_total",
        "jobset_failed_total",
        "jobset_restarts_total",
        "rest_client_requests_total",  # API request rate by code
        "rest_client_request_duration_seconds_bucket",
        "leader_election_master_status",
    ):
        assert metric in exprs, metric
    assert any("sum by (code)" in t["expr"] for p in panels for t in p["targets"])
    # Well-formed: unique ids, every query on the datasource variable, no overlapping panels.
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for p in panels:
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        # The scrape job is the $job variable's, never written into a query.
        assert all('job=~"$job"' in t["expr"] for t in p["targets"]), p["title"]
        assert not any(re.search(r"\bjob=[^~]", t["expr"]) for t in p["targets"]), p["title"]
    cells: set[tuple[int, int]] = set()
    for p in board["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not (cells & mine), f"{p['title']} overlaps another panel"
        cells |= mine
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert set(variables) == {"datasource", "job", "controller", "namespace"}
    job = variables["job"]
    assert job["definition"] == "label_values(controller_runtime_reconcile_total, job)"
    assert job["current"]["value"] == ["jobset-controller"]  # the ServiceMonitor's job
    for chained in ("controller", "namespace"):
        assert 'job=~"$job"' in variables[chained]["definition"], chained


def test_prometheus_rule_of_config_is_the_rules_file() -> None:
    rule = yaml.safe_load((REPO / "config" / "prometheus" / "prometheus_rule.yaml").read_text())
    assert rule["kind"] == "PrometheusRule"
    assert rule["spec"] == yaml.safe_load(RULES.read_text())


def test_alerts_carry_severity_and_runbook() -> None:
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    ops = (REPO / "docs" / "operations.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", ops, flags=re.M)
    }
    for r in rules:
        assert r["labels"]["severity"] in ("critical", "warning"), r["alert"]
        assert r["annotations"]["summary"] and len(r["annotations"]["description"]) > 80
        anchor = r["annotations"]["runbook_url"].rsplit("#", 1)[1]
        assert anchor in anchors, f"{r['alert']}: docs/operations.md has no #{anchor}"


def _documented() -> set[str]:
    names: set[str] = set()
    for line in (REPO / "docs" / "metrics.md").read_text().splitlines():
        if line.startswith("|"):
            names.update(re.findall(r"`([a-z_:][a-z0-9_:]*\*?)`", line.split("|")[1]))
    return names


def test_rules_and_dashboard_use_only_documented_metrics() -> None:
    documented = _documented()
    text = RULES.read_text() + DASHBOARD.read_text()
    used = set(
        re.findall(
            r"\b((?:controller_runtime|workqueue|rest_client|leader_election|jobset|process)_[a-z_]+)\b",
            text,
        )
    )
    suffixes = ("_bucket", "_count", "_sum")
    missing = set()
    for name in used:
        base = next((name[: -len(s)] for s in suffixes if name.endswith(s)), name)
        if base in ("jobset_controller",):  # the job label's value, not a metric
            continue
        if base not in documented and not any(
            d.endswith("*") and base.startswith(d[:-1]) for d in documented
        ):
            missing.add(name)
    assert not missing, f"not in docs/metrics.md: {sorted(missing)}"


# ------------------------------------------------------------------------------------ Dockerfile


def _instructions() -> list[tuple[str, str]]:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_builds_a_slim_non_root_image_of_the_runtime_only() -> None:
    ins = _instructions()
    # Every stage FROM the BASE_IMAGE build arg, whose default is the slim Python (a digest,
    # if one is written, pins it: `python:3.11-slim-bookworm@sha256:<64 hex>`).
    args = dict(rest.partition("=")[::2] for word, rest in ins if word == "ARG")
    bases = [rest.split()[0] for word, rest in ins if word == "FROM"]
    assert bases and set(bases) == {"${BASE_IMAGE}"}, bases
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?(@sha256:[0-9a-f]{64})?", args["BASE_IMAGE"])
    final = ins[max(i for i, (w, _) in enumerate(ins) if w == "FROM") :]
    (user,) = [rest for w, rest in final if w == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root USER (runAsNonRoot checks it)"
    # The uid matches the Deployment's runAsUser.
    manager = yaml.safe_load((REPO / "config" / "manager" / "manager.yaml").read_text())
    assert manager["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid)
    # Only the runtime dependencies, no extras (from the lock: tests/unit/deploy/test_lock.py).
    installs = [rest for w, rest in ins if w == "RUN" and "pip install" in rest]
    assert installs and all("[" not in rest for rest in installs), installs
    (entry,) = [rest for w, rest in final if w == "ENTRYPOINT"]
    (cmd,) = [rest for w, rest in final if w == "CMD"]
    argv = json.loads(entry) + json.loads(cmd)
    assert argv == ["jobset", "controller"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["jobset"] == "jobset.cli:main"
    # What the image copies exists, and .dockerignore lets exactly that through.
    copies = [shlex.split(rest) for w, rest in ins if w == "COPY" and "--from" not in rest]
    sources = [s for c in copies for s in c[:-1]]
    # src/jobset/data's symlinks point into config/crd/bases and examples/: their targets go
    # into the build context too, or the image's wheel would lack the package data.
    locks = ["requirements/controller.lock", "requirements/build.lock"]
    # No simulator: src/kubesim stays out of the image (its wheel is packaging/kubesim's).
    assert sources == [
        *locks,
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "packaging/kubeutil",
        "src/jobset",
        "src/kubeutil",
        "config/crd/bases",
        "examples",
    ]
    for s in sources:
        assert (REPO / s).exists(), s
    for link in (REPO / "src" / "jobset" / "data").iterdir():
        if link.is_symlink():
            target = link.resolve().relative_to(REPO)
            assert str(target) in sources, f"{link} -> {target} is not copied"
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") + 1 :][:10] == [
        "!pyproject.toml",
        "!README.md",
        "!src/jobset/",
        "!src/kubeutil/",
        "!config/crd/bases/",
        "!examples/",
        *(f"!{lock}" for lock in locks),
        "!LICENSE",
        "!packaging/kubeutil/",
    ]


def test_deployment_command_is_the_image_entry_point() -> None:
    manager = yaml.safe_load((REPO / "config" / "manager" / "manager.yaml").read_text())
    (container,) = manager["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["jobset", "controller"]
