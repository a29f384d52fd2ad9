"""Starting simulated clusters for tests (the fixtures are in tests/conftest.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubesim.process import SimProcess, start_sim

__all__ = ["start_sim_none"]


def start_sim_none(directory: Path, *flags: str, jobset_crd: bool = False) -> SimProcess:
    """`jobset sim --sim-level none [flags]`; with `jobset_crd`, the JobSet CRD installed and
    established the way the controller installs it (`jobset.controllers.crd.apply_crds`)."""
    s = start_sim(directory, "--sim-level", "none", *flags)
    if jobset_crd:
        try:
            asyncio.run(_install_crds(s))
        except BaseException:
            s.stop()
            raise
    return s


async def _install_crds(s: SimProcess) -> None:
    from jobset.controllers.crd import apply_crds
    from jobset.runtime.client import Client

    client = await Client.connect(str(s.kubeconfig))
    try:
        await apply_crds(client)
    finally:
        await client.close()
