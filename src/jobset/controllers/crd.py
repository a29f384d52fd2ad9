"""Install the JobSet CRD into a cluster and wait until it is served.

Used by `jobset dev` (a fresh simulated cluster starts without CRDs) and by the tests.
In a real cluster the CRD comes with the Helm chart or `kubectl apply -k config/default`.
The CRD files ship in the wheel as package data (`jobset.data.CRD_DIR`), so this works from
an installed package as well as from a source checkout.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Final

import yaml

from jobset.data import CRD_DIR
from jobset.runtime.client import ApiError, Client, Resource

__all__ = ["CRDS", "DEFAULT_CRD_DIR", "apply_crds", "wait_established"]

CRDS: Final = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
# The package's copy of config/crd/bases.
DEFAULT_CRD_DIR: Final = CRD_DIR


def _load(directory: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


async def wait_established(client: Client, name: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while True:
        crd = await client.get(CRDS, name)
        conds = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRD {name} not established after {within}s")
        await asyncio.sleep(0.1)


async def apply_crds(client: Client, directory: Path = DEFAULT_CRD_DIR) -> list[str]:
    """Create (or replace) every CRD in `directory`; return their names once established."""
    names: list[str] = []
    docs = _load(directory)
    if not docs:
        raise FileNotFoundError(f"no CustomResourceDefinition in {directory}")
    for doc in docs:
        name = str(doc["metadata"]["name"])
        try:
            await client.create(CRDS, doc)
        except ApiError as err:
            if not err.already_exists:
                raise
            current = await client.get(CRDS, name)
            doc = {**doc, "metadata": {**doc["metadata"], **_rv(current)}}
            await client.update(CRDS, doc)
        names.append(name)
    for name in names:
        await wait_established(client, name)
    return names


def _rv(obj: dict[str, Any]) -> dict[str, Any]:
    return {"resourceVersion": obj["metadata"]["resourceVersion"]}
