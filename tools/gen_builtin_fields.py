#!/usr/bin/env python3
"""Generate src/kubesim/machinery/schema/builtin_fields.json: the fields of every built-in
Kubernetes type, for the simulated API server's strict field validation.

Why a generator: kube-apiserver refuses (or warns about) a field a built-in type does not
have, and the simulator has no Go types to decode into. The model classes of
`kubernetes_asyncio` (pinned in pyproject.toml) list every type's JSON fields and their
types (`attribute_map`, `openapi_types`); this writes them as one table, by model class:
`{"V1PodSpec": {"containers": "list[V1Container]", ...}, ...}`. A unit test regenerates the
table and compares it with the committed file.

Usage:
    python tools/gen_builtin_fields.py          # rewrite the table
    python tools/gen_builtin_fields.py --check  # exit 1 if the committed table is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client import models

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "src" / "kubesim" / "machinery" / "schema" / "builtin_fields.json"


def render() -> str:
    """The table as committed: one model per line, sorted, so a diff shows what changed."""
    table: dict[str, dict[str, str]] = {}
    for name in dir(models):
        cls: Any = getattr(models, name)
        types = getattr(cls, "openapi_types", None) if isinstance(cls, type) else None
        if isinstance(types, dict):
            table[name] = {cls.attribute_map[k]: v for k, v in types.items()}
    lines = [
        f"{json.dumps(name)}:{json.dumps(table[name], sort_keys=True, separators=(',', ':'))}"
        for name in sorted(table)
    ]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run python tools/gen_builtin_fields.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
