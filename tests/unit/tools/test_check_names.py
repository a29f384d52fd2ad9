"""Every Python name the docs cite in backticks exists in the code (`tools/check_names.py`)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.tools import REPO, load_tool

check = load_tool("check_names")

CODE = """
class Base:
    def run(self) -> None:
        self.started = True


class Controller(Base):
    workers = 2

    async def reconcile(self) -> None:
        pass


def plan() -> None:
    pass
"""


def _repo(tmp_path: Path, doc: str) -> Path:
    (tmp_path / "src" / "jobset").mkdir(parents=True)
    (tmp_path / "src" / "jobset" / "__init__.py").write_text("")
    (tmp_path / "src" / "jobset" / "controller.py").write_text(CODE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(doc)
    return tmp_path


def test_every_cited_name_exists() -> None:
    assert check.missing(REPO) == []


def test_names_that_exist_pass(tmp_path: Path) -> None:
    doc = (
        "`Controller.reconcile` runs `plan()`; `Controller.workers`, `Controller.run()` and "
        "`Controller.started` (from its base); `jobset.controller.Controller.reconcile`, "
        "`jobset.controller`, `len(x)`, CEL's `has(self.a)`; upstream's Go "
        "`JobSetReconciler.Reconcile` and the API group `jobset.x-k8s.io` are not ours.\n"
    )
    assert check.missing(_repo(tmp_path, doc)) == []


def test_a_wrong_class_member_function_or_module_name_is_reported(tmp_path: Path) -> None:
    doc = (
        "`JobSetReconciler.reconcile`, `Controller.sync`, `planner()`, "
        "`jobset.controller.Reconciler`, `jobset.controller.Controller.resync`.\n"
    )
    assert check.missing(_repo(tmp_path, doc)) == [
        "docs/architecture.md: `Controller.sync`: class Controller has no member sync",
        "docs/architecture.md: `JobSetReconciler.reconcile`: no class JobSetReconciler",
        "docs/architecture.md: `jobset.controller.Controller.resync`: "
        "class Controller has no member resync",
        "docs/architecture.md: `jobset.controller.Reconciler`: "
        "jobset.controller defines no Reconciler",
        "docs/architecture.md: `planner()`: no function planner",
    ]
