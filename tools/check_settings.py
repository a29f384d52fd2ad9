"""One source for each setting: a value the code owns is written in the docs only as a
rendered copy of the code's constant.

The benchmark goals (`benchmarks/report.py`, `rate_report.py`, `admission.py`, `fairness.py`,
`train_recovery.py`, `pod_scale.py`) and the creation slice (`controllers/fairshare.py`) are
judged or applied by code; docs that restate them drift the day the code changes. A doc cites
such a value inside a marker that names the constant, and this renders the code's value there:

    the slice is <!-- setting: jobset.controllers.fairshare.DEFAULT_SLICE_SECONDS -->0.5<!-- /setting --> s

(Markdown shows the value alone.) The check fails when a marker's text is not the code's
value, names no known setting, or when a Markdown paragraph (or table row) about a setting -
its `context` - states the setting's value outside a marker.

    python tools/check_settings.py           # exit 1 and one line per problem
    python tools/check_settings.py --write   # render every marker from the code

Hand-written on `ast`: importing the benchmarks to read their constants would need their
dependencies and run their imports.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKDOWN = ("*.md", "docs/**/*.md", "examples/**/*.md", "charts/**/*.md", "benchmarks/*.md")
# CHANGELOG.md records what was true when; RESULTS.md is generated from the code's values.
SKIPPED = {"CHANGELOG.md", "RESULTS.md"}

_MARKER = re.compile(r"<!-- setting: ([\w.]+) -->(.*?)<!-- /setting -->")
_NUMBER = r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|[¼½¾])(?![\w.]\d)"
_FRACTIONS = {"¼": 0.25, "½": 0.5, "¾": 0.75}


def _g(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class Setting:
    """A constant of `module` (a file under the repository) that docs cite."""

    module: str  # dotted, as imported: "benchmarks.report"
    name: str
    context: str  # a paragraph that matches this (case-insensitive) is about the setting
    render: Callable[[float], str] = _g
    # Units the value is written with in prose, as (pattern after the number, scale).
    units: tuple[tuple[str, float], ...] = (("", 1.0),)

    @property
    def key(self) -> str:
        return f"{self.module}.{self.name}"

    def path(self, repo: Path) -> Path:
        parts = self.module.split(".")
        top = repo / "src" if parts[0] in ("jobset", "kubesim", "kubeutil") else repo
        return top.joinpath(*parts).with_suffix(".py")


_SECONDS = ((r"\s*s\b", 1.0), (r"\s*seconds?\b", 1.0), (r"\s*minutes?\b", 60.0))
SETTINGS: tuple[Setting, ...] = (
    Setting("benchmarks.report", "GOAL_THROUGHPUT", r"creation throughput|goal for creation"),
    Setting("benchmarks.report", "GOAL_CPU_GROWTH", r"CPU per Job grows"),
    Setting(
        "benchmarks.report",
        "GOAL_RSS_BYTES",
        r"RSS per cached child Job",
        render=lambda v: _g(v / 1024),
        units=((r"\s*KB", 1024.0), (r"\s*KiB", 1024.0)),
    ),
    Setting("benchmarks.report", "GOAL_STATUS_WRITES", r"status writes over"),
    Setting("benchmarks.rate_report", "GOAL_RATE", r"unthrottled creation rate|rate >="),
    Setting("benchmarks.rate_report", "GOAL_CPU", r"client CPU per Job"),
    Setting("benchmarks.admission", "GOAL_P99_MS", r"p99", units=((r"\s*ms\b", 1.0),)),
    Setting("benchmarks.admission", "GOAL_POD_RATE", r"with the webhooks|pods/s with"),
    Setting("benchmarks.fairness", "GOAL_SECONDS", r"3-Job JobSet|Goal: within", units=_SECONDS),
    Setting("benchmarks.train_recovery", "GOAL_RATIO", r"InPlaceRestart.*Recreate"),
    Setting("benchmarks.train_recovery", "RESTART_GOAL_RATIO", r"restart phase"),
    Setting("benchmarks.dns_latency", "GOAL_RATIO", r"loaded median"),
    Setting(
        "benchmarks.dns_latency", "GOAL_SLACK_MS", r"loaded median", units=((r"\s*ms\b", 1.0),)
    ),
    Setting("benchmarks.pod_scale", "ANCHOR_PODS", r"anchor", render=lambda v: f"{v:,.0f}"),
    Setting("benchmarks.pod_scale", "ANCHOR_SECONDS", r"anchor", units=_SECONDS),
    Setting(
        "benchmarks.pod_scale",
        "ANCHOR_RATE",
        r"anchor",
        render=lambda v: f"{v:.0f}",
        units=((r"\s*pods/s", 1.0), ("", 1.0)),
    ),
    Setting(
        "benchmarks.pod_scale",
        "GOAL_SERVICE_SECONDS",
        r"headless Service and within",
        units=_SECONDS,
    ),
    Setting(
        "benchmarks.pod_scale",
        "GOAL_NO_SERVICE_SECONDS",
        r"headless Service and within",
        units=_SECONDS,
    ),
    Setting(
        "benchmarks.cpu_guard",
        "MAX_RISE",
        r"rises? by|rise of more than|regression",
        render=lambda v: _g(round(v * 100, 6)),
        units=((r"\s*%", 0.01),),
    ),
    Setting(
        "jobset.controllers.fairshare",
        "DEFAULT_SLICE_SECONDS",
        r"slice",
        units=((r"\s*s\b", 1.0),),
    ),
    Setting(
        "jobset.controllers.fairshare", "PLAN_SLICE_RATIO", r"slice", units=((r"\s*times", 1.0),)
    ),
    Setting(
        "jobset.controllers.fairshare",
        "MAX_PLAN_SLICE_SECONDS",
        r"slice",
        units=((r"\s*s\b", 1.0),),
    ),
)

_OPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}


def _evaluate(node: ast.expr, known: dict[str, float]) -> float:
    """A constant expression: numbers, + - * / //, and earlier constants of the module."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left, known), _evaluate(node.right, known))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, known)
    raise ValueError(f"not a constant expression: {ast.unparse(node)}")


def module_constants(path: Path) -> dict[str, float]:
    """The numeric module-level constants of the Python file at `path`."""
    known: dict[str, float] = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and value is not None:
            try:
                known[target.id] = _evaluate(value, known)
            except ValueError:
                continue
    return known


def values(repo: Path, settings: Sequence[Setting] = SETTINGS) -> dict[str, float]:
    """Each setting's value, read from its module."""
    out: dict[str, float] = {}
    for setting in settings:
        constants = module_constants(setting.path(repo))
        if setting.name not in constants:
            raise SystemExit(f"{setting.path(repo)}: no numeric constant {setting.name}")
        out[setting.key] = constants[setting.name]
    return out


def paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each paragraph; a table row is a paragraph of its own."""
    start, lines = 0, list[str]()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("|"):
            if lines:
                yield start, "\n".join(lines)
            lines = []
            if line.strip():
                yield number, line
            continue
        if not lines:
            start = number
        lines.append(line)
    if lines:
        yield start, "\n".join(lines)


def restated(setting: Setting, value: float, paragraph: str) -> str | None:
    """The text in `paragraph` (markers removed) that states `value`, if it is about it."""
    prose = _MARKER.sub("", paragraph)
    if not re.search(setting.context, prose, re.IGNORECASE):
        return None
    for unit, scale in setting.units:
        for m in re.finditer(_NUMBER + unit, prose):
            number = _FRACTIONS.get(m[1]) or float(m[1].replace(",", ""))
            rounded = scale == 1.0 and m[1] == setting.render(value)
            if rounded or math.isclose(number * scale, value, rel_tol=1e-9):
                return m[0]
    return None


def docs(repo: Path) -> Iterator[Path]:
    seen: set[Path] = set()
    for pattern in MARKDOWN:
        for path in sorted(repo.glob(pattern)):
            if path not in seen and path.name not in SKIPPED and ".venv" not in path.parts:
                seen.add(path)
                yield path


def problems(repo: Path = REPO, settings: Sequence[Setting] = SETTINGS) -> list[str]:
    by_key = {s.key: s for s in settings}
    known = values(repo, settings)
    found: list[str] = []
    for path in docs(repo):
        doc = str(path.relative_to(repo))
        for line, paragraph in paragraphs(path.read_text()):
            for m in _MARKER.finditer(paragraph):
                if m[1] not in by_key:
                    found.append(f"{doc}:{line}: no setting {m[1]} (tools/check_settings.py)")
                elif m[2] != by_key[m[1]].render(known[m[1]]):
                    want = by_key[m[1]].render(known[m[1]])
                    found.append(f"{doc}:{line}: {m[1]} is {want}, the doc says {m[2]}")
            for setting in settings:
                text = restated(setting, known[setting.key], paragraph)
                if text is not None:
                    found.append(
                        f"{doc}:{line}: restates {setting.key} ({text.strip()}); cite it as "
                        f"<!-- setting: {setting.key} -->...<!-- /setting -->"
                    )
    return found


def write(repo: Path = REPO, settings: Sequence[Setting] = SETTINGS) -> list[Path]:
    """Render every marker from the code; the docs changed."""
    by_key = {s.key: s for s in settings}
    known = values(repo, settings)

    def render(m: re.Match[str]) -> str:
        setting = by_key.get(m[1])
        text = m[2] if setting is None else setting.render(known[m[1]])
        return f"<!-- setting: {m[1]} -->{text}<!-- /setting -->"

    changed = []
    for path in docs(repo):
        text = path.read_text()
        new = _MARKER.sub(render, text)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["--write"]:
        for path in write():
            print(f"rendered {path.relative_to(REPO)}")
        return 0
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
