"""A controller process for the webhook and placement tests and the placement benchmark.

It runs what `jobset controller` will run once the CLI wiring lands: a runtime Manager with
the JobSet reconciler, exclusive placement (`add_placement_controllers`) and the admission
webhooks (`setup_webhooks`), installed into the cluster with `install_webhooks`, the
Service pointing the simulated API server at this process's webhook port.

Until the reconciler calls the planner itself, the planner is attached here by wrapping the
reconciler's Job creation: `place()` right before each create, `release()` when the create
fails, and `wake` re-queues JobSets that waited for a domain. This is exactly the contract
docs/placement.md asks of the reconciler.

    python -m tests.integration.placement.harness --kubeconfig K --webhook-port P \
        --health-port H [--metrics-port M] [--cert-validity S --cert-lookahead S] \
        [--no-reconciler] [--feature-gates K=V,...]

Prints `harness ready` once /readyz passes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import signal
import sys

from jobset.controllers.crd import apply_crds
from jobset.controllers.features import parse_feature_gates
from jobset.controllers.jobset_controller import JobSetController
from jobset.placement.setup import Placement, add_placement_controllers
from jobset.runtime import Manager, ManagerOptions
from jobset.runtime.health import Probes
from jobset.runtime.logging import configure_logging
from jobset.webhooks import CertOptions, WebhookOptions, install_webhooks, setup_webhooks


def attach_planner(ctrl: JobSetController, placement: Placement) -> None:
    """Let the planner pick domains for the reconciler's Jobs, as `jobset controller` does."""
    ctrl.attach_placement(placement.planner)


async def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--webhook-port", type=int, required=True)
    p.add_argument("--health-port", type=int, default=0)
    p.add_argument("--metrics-port", type=int, default=-1, help="plain HTTP /metrics (-1: none)")
    p.add_argument("--cert-validity", type=float, default=0.0, help="seconds (0: default)")
    p.add_argument("--cert-lookahead", type=float, default=0.0, help="seconds (0: default)")
    p.add_argument("--no-reconciler", action="store_true")
    p.add_argument("--concurrency", type=int, default=5)
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--webhook-client-ca-from-cluster", action="store_true")
    p.add_argument("--feature-gates", default="", help="as `jobset controller` takes them")
    args = p.parse_args(argv)
    configure_logging("console", args.log_level)

    manager = await Manager.create(
        ManagerOptions(
            kubeconfig=args.kubeconfig,
            metrics_port=None if args.metrics_port < 0 else args.metrics_port,
            health_port=args.health_port,
            gc_freeze=True,  # this process is the manager's own, as `jobset controller`'s is
            qps=1000,
            burst=2000,
            concurrency=args.concurrency,
        )
    )
    await apply_crds(manager.client)
    features = parse_feature_gates(args.feature_gates)
    ctrl = None if args.no_reconciler else JobSetController(manager, features=features)
    placement = add_placement_controllers(manager)
    if ctrl is not None:
        attach_planner(ctrl, placement)
    certs = CertOptions(namespace="jobset-system", extra_dns_names=("localhost",))
    if args.cert_validity:
        # The CA outlives several serving certificates, so rotations keep the caBundle.
        certs.validity = dt.timedelta(seconds=args.cert_validity)
        certs.ca_validity = dt.timedelta(seconds=args.cert_validity * 4)
    if args.cert_lookahead:
        certs.lookahead = dt.timedelta(seconds=args.cert_lookahead)
    webhooks = setup_webhooks(
        manager,
        WebhookOptions(
            port=args.webhook_port,
            host="127.0.0.1",
            certs=certs,
            client_ca_from_cluster=args.webhook_client_ca_from_cluster,
            features=features,
        ),
    )
    await install_webhooks(
        manager.client, target_port=args.webhook_port, address=f"127.0.0.1:{args.webhook_port}"
    )
    await webhooks.start()
    run = asyncio.create_task(manager.run())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, manager.stop)
    while not Probes.evaluate(manager.probes.readiness)[0]:
        if run.done():
            break
        await asyncio.sleep(0.05)
    else:
        print(f"harness ready (webhook port {webhooks.server.port})", flush=True)
    try:
        code = await run
    finally:
        with contextlib.suppress(Exception):
            await webhooks.stop()
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
