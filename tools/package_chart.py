"""Package charts/jobset as a .tgz with Helm's own engine (helm-python-sdk), ready to push
to an OCI registry; optionally push it.

    python tools/package_chart.py [--dest dist] [--push oci://REGISTRY/charts]   # make chart

Before packaging: the chart's README must be current (tools/gen_chart_docs.py) and
`helm lint --strict` clean for the default values and for certificate.mode=cert-manager,
and the chart's version and appVersion must be the package's (pyproject.toml): the chart
and the image are released together under one version (docs/operations.md, "Releasing").

--push needs a registry that accepts it; log in first with `helm registry login` or
oras, whose credentials (~/.config/helm/registry/config.json) the engine reads. Nothing
in this repository pushes by itself.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tomllib
from pathlib import Path

import helm_python as helm
import yaml

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "jobset"
LINTED_VALUES: tuple[dict[str, object] | None, ...] = (
    None,
    {"certificate": {"mode": "cert-manager"}},
)


def _docs_render(chart: Path) -> str:
    spec = importlib.util.spec_from_file_location(
        "gen_chart_docs", REPO / "tools" / "gen_chart_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return str(module.render(chart))


def problems(chart: Path = CHART) -> list[str]:
    """What stops the chart from being released as it is (empty: nothing)."""
    found: list[str] = []
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    if meta["version"] != version or meta["appVersion"] != version:
        found.append(
            f"Chart.yaml version {meta['version']} / appVersion {meta['appVersion']}: "
            f"both must be pyproject.toml's {version}"
        )
    if (chart / "README.md").read_text() != _docs_render(chart):
        found.append(f"{chart / 'README.md'} is stale: run make chart-docs")
    for values in LINTED_VALUES:
        report = helm.lint(str(chart), values, strict=True)
        found += [f"helm lint ({values or 'defaults'}): {e}" for e in report["errors"]]
        found += [
            f"helm lint ({values or 'defaults'}): {m['path']}: {m['error']}"
            for m in report["messages"]
            if m["severity"] >= 2
        ]
    return found


def package(dest: Path, chart: Path = CHART) -> Path:
    """The chart's .tgz in `dest` (jobset-<version>.tgz), after the checks of problems()."""
    found = problems(chart)
    if found:
        raise SystemExit("not packaged:\n  " + "\n  ".join(found))
    dest.mkdir(parents=True, exist_ok=True)
    return Path(helm.package(str(chart), destination=str(dest)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=REPO / "dist", help="directory of the .tgz")
    parser.add_argument("--push", metavar="oci://REGISTRY/PATH", help="push the .tgz there")
    args = parser.parse_args(argv)
    if args.push and not args.push.startswith("oci://"):
        parser.error(f"--push {args.push}: an OCI repository root, oci://REGISTRY/PATH")
    archive = package(args.dest)
    print(f"packaged {archive}")
    if args.push:
        # A client on Helm's own registry configuration: the credentials of `helm registry login`.
        with helm.RegistryClient() as client:
            try:
                result = helm.push(str(archive), args.push, client=client)
            except helm.HelmRegistryError as exc:
                raise SystemExit(f"push of {archive.name} to {args.push} failed: {exc}") from None
        print(f"pushed {archive.name} to {args.push}: {result}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
