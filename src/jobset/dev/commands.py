"""`jobset sim` and `jobset dev`: the simulated cluster alone, or with the product on it.

The only commands that import the simulator (`kubesim`, a distribution of its own that the
`[sim]` extra installs: `missing_sim_extra` turns its absence into one line). The cluster's
flags, options and serving loop are `kubesim.serve`'s (`kubesim serve` runs the same).
`jobset dev` starts a `kubesim.cluster.SimCluster`, installs the CRD
(`jobset.controllers.crd`) and the webhook configurations, and runs the same components as
`jobset controller` (`jobset.wiring`) in the same process.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from typing import Final

from jobset.wiring import add_jobset_components, check_flags, run_manager

__all__ = [
    "DEV_BIND_ADDRESS",
    "DEV_DEFAULT_NODES",
    "SIM_DEFAULT_NODES",
    "SIM_EXTRA",
    "SIM_EXTRA_MODULES",
    "add_sim_flags",
    "missing_sim_extra",
    "run_dev",
    "run_sim",
]

# Where `jobset dev` serves everything (API server, webhooks, metrics, health).
DEV_BIND_ADDRESS: Final = "127.0.0.1"
# A new user's cluster needs somewhere to run pods: 4 node pools of 4 nodes by default.
DEV_DEFAULT_NODES: Final = "pools=4x4,label=cloud.google.com/gke-nodepool"
# `jobset sim` starts as kind does, with one node, so a pod has somewhere to run ('0': none).
SIM_DEFAULT_NODES: Final = "1"


def add_sim_flags(p: argparse.ArgumentParser, simulator: bool = True) -> None:
    """The simulated cluster's flags, `kubesim.serve`'s; without the simulator installed (or
    not `simulator`: another command was chosen) only `--kubeconfig`, so that `jobset sim
    --help` still answers (running says what to install)."""
    if simulator:
        try:
            from kubesim.serve import add_sim_flags as add_simulator_flags
        except ModuleNotFoundError:
            pass
        else:
            add_simulator_flags(p)
            return
    p.add_argument(
        "--kubeconfig",
        required=True,
        help=f"where to write the kubeconfig for clients (the other flags: pip install "
        f"'{SIM_EXTRA}')",
    )


# What the `[sim]` extra installs (pyproject.toml), by top-level module: the simulator itself
# (the `kubesim` distribution) and the modules it needs that the controller does not. A unit
# test keeps this list and the extra in step.
SIM_EXTRA: Final = "jobset-py[sim]"
SIM_EXTRA_MODULES: Final = ("kubesim", "celpy", "lark", "dns", "httptools", "sortedcontainers")


def missing_sim_extra(command: str) -> str | None:
    """The one line `jobset sim` / `jobset dev` print when the simulator's dependencies are
    not installed (the controller image and a plain `pip install jobset-py` have none), or None.

    Checked before anything starts: a missing module would otherwise surface as a traceback
    from deep inside the simulator, or only once a CRD with CEL rules is applied.
    """
    for module in SIM_EXTRA_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            return (
                f"jobset {command}: the simulated cluster needs the {exc.name or module!r} module, "
                f"from the sim extra: pip install '{SIM_EXTRA}'"
            )
    return None


async def run_sim(args: argparse.Namespace) -> int:
    from kubesim.serve import serve

    return await serve(args, "jobset sim")


async def run_dev(args: argparse.Namespace) -> int:
    from jobset.controllers.crd import apply_crds
    from jobset.runtime import Manager, ManagerOptions
    from jobset.runtime.health import Probes
    from jobset.runtime.logging import configure_logging, status_line
    from jobset.webhooks import install_webhooks
    from kubesim.cluster import SimCluster
    from kubesim.process import free_port
    from kubesim.serve import sim_options
    from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL

    configure_logging(args.log_format, args.log_level)
    check_flags(args)
    options = ManagerOptions(
        kubeconfig=args.kubeconfig,
        # Loopback, like the simulated API server and the webhooks: a developer's metrics
        # and health servers are nobody else's business.
        bind_address=DEV_BIND_ADDRESS,
        concurrency=args.concurrency,
        reconcile_timeout=args.reconcile_timeout,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        metrics_secure=args.metrics_secure,
        metrics_cert_dir=args.metrics_cert_dir or None,
        health_port=None if args.health_port < 0 else args.health_port,
        log_format=args.log_format,
        log_level=args.log_level,
        gc_freeze=True,  # this process is the manager's (and the simulator's)
        switch_interval=LOOP_SWITCH_INTERVAL,  # ... and so is its interpreter
    )
    options.validate()
    cluster = SimCluster(sim_options(args))
    await cluster.start()
    try:
        manager = await Manager.create(options)
        if manager.gc_freezer is not None:  # gc_freeze above: always
            cluster.http.debug_views["gc"] = manager.gc_freezer.report
        await apply_crds(manager.client)
        port = args.webhook_port or free_port()
        webhooks = add_jobset_components(manager, args, port, host=DEV_BIND_ADDRESS)
        # The simulated API server reaches the webhook Service at this process's port.
        address = f"{DEV_BIND_ADDRESS}:{port}"
        await install_webhooks(manager.client, target_port=port, address=address)
        run = asyncio.create_task(run_manager(manager, webhooks))
        while not Probes.evaluate(manager.probes.readiness)[0]:
            if run.done():
                return run.result()
            await asyncio.sleep(0.05)
        status_line(
            args.log_format,
            f"jobset dev ready: {cluster.url} (kubeconfig {args.kubeconfig}, "
            f"sim-level {args.sim_level}, webhooks on 127.0.0.1:{port})",
            url=cluster.url,
            kubeconfig=str(args.kubeconfig),
            webhook_address=address,
        )
        code = await run
    finally:
        await cluster.stop()
    status_line(args.log_format, "jobset dev stopped")
    return code
