"""`promtool` on the alert rules: they parse, and each alert fires when (and only when) meant."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.integration.deploy.helpers import CHART, CONFIG, DATA

pytestmark = [pytest.mark.prometheus]

RULES = CHART / "files" / "prometheus-rules.yaml"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed: `make prometheus` (Debian package prometheus)"
    return subprocess.run(
        [promtool, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_rules_file_passes_check_rules() -> None:
    out = _promtool("check", "rules", str(RULES))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 7 rules found" in out.stdout


def test_kustomize_prometheus_rule_passes_check_rules(tmp_path: Path) -> None:
    rule = yaml.safe_load((CONFIG / "prometheus" / "prometheus_rule.yaml").read_text())
    plain = tmp_path / "rules.yaml"
    plain.write_text(yaml.safe_dump(rule["spec"]))
    out = _promtool("check", "rules", str(plain))
    assert out.returncode == 0, out.stdout + out.stderr


def test_alerts_fire_as_specified() -> None:
    out = _promtool("test", "rules", str(DATA / "alerts_test.yaml"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout
