"""charts/jobset/README.md is generated from values.yaml's `# --` comments by
tools/gen_chart_docs.py (helm-docs' conventions), and the committed file is current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "jobset"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_chart_docs", REPO / "tools" / "gen_chart_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while executing it
    spec.loader.exec_module(module)
    return module


def test_committed_readme_is_current() -> None:
    assert (CHART / "README.md").read_text() == _generator().render(CHART), (
        "stale charts/jobset/README.md: run make chart-docs"
    )
    assert _generator().main(["gen_chart_docs.py", "--check"]) == 0


SAMPLE = """\
# A file comment: documents nothing.
image:
  # -- Image repository.
  repository: example/jobset
  pullPolicy: IfNotPresent
controller:
  # -- (int) At most this many; empty
  # means no limit.
  maxUnavailable: null
  # -- Resources, shown whole.
  resources:
    limits:
      cpu: "2"
  peers:
    - namespaceSelector:
        matchLabels:
          team: a
  empty: {}
"""


def test_parser_follows_helm_docs_conventions() -> None:
    schema = {"properties": {"image": {"properties": {"pullPolicy": {"description": "Pull."}}}}}
    rows = {r.key: r for r in _generator().parse(SAMPLE, schema)}
    # Documented keys, their continuation lines joined, the type annotation taken.
    assert rows["image.repository"].description == "Image repository."
    assert (rows["controller.maxUnavailable"].type, rows["controller.maxUnavailable"].default) == (
        "int",
        None,
    )
    assert rows["controller.maxUnavailable"].description == (
        "At most this many; empty means no limit."
    )
    # A documented map is one row; its children get none.
    assert rows["controller.resources"].default == {"limits": {"cpu": "2"}}
    # Undocumented leaves get a row, described by the schema where it can.
    assert rows["image.pullPolicy"].description == "Pull."
    assert rows["controller.empty"].type == "object"
    # Keys inside a list item belong to the list's value.
    assert rows["controller.peers"].default == [
        {"namespaceSelector": {"matchLabels": {"team": "a"}}}
    ]
    assert list(rows) == [
        "image.repository",
        "image.pullPolicy",
        "controller.maxUnavailable",
        "controller.resources",
        "controller.peers",
        "controller.empty",
    ]


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [leaf for k, v in node.items() for leaf in _leaves(v, f"{prefix}{k}.")]
    return [prefix.rstrip(".")]


def test_every_value_is_in_the_table() -> None:
    keys = [r.key for r in _generator().parse((CHART / "values.yaml").read_text())]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    missing = [
        leaf
        for leaf in _leaves(values)
        if not any(leaf == k or leaf.startswith(k + ".") for k in keys)
    ]
    assert missing == []


def test_chart_metadata_names_this_project() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["home"] == "https://github.com/jobset-py/jobset-py"
    assert chart["sources"] == [chart["home"]]
    assert chart["maintainers"] and all(m["name"] for m in chart["maintainers"])
