"""The manager: owns the client, shared informers, controllers, leader election, probes,
metrics, and the order things start and stop in (controller-runtime's `manager.Manager`).

Start: metrics (plain, or with `--metrics-secure` HTTPS behind TokenReview +
SubjectAccessReview, see `health.py`) and probe servers → informers → wait until every cache has synced →
(with leader election) campaign → controllers and event recorders. Caches are filled on
every replica, so a follower that becomes leader can reconcile at once; only the leader
runs controllers, so a follower does no writes.

Readiness (`/readyz`): every informer synced, the API server reachable (not every request
failing for 5 s) and, with leader election, this replica is
either leading or standing by behind a leader it has just observed (it reached the API
server and read the Lease). Liveness (`/healthz`): the informers' list/watch loops are
running.

Stop (SIGTERM/SIGINT, or `stop()`): controllers finish what they have within
`graceful_shutdown_timeout`, the lease is released so a successor starts at once, events are
flushed, informers and servers stop. Losing the lease stops the controllers at once -
reconciles in flight are cancelled, not drained: a replica that could not renew may be cut
off, and a write it finished after its lease expired would act beside the new leader - and
makes `run()` return 1: like controller-runtime the process should exit and be restarted,
since its state can no longer be trusted to be the leader's.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from pathlib import Path
from typing import Final

from jobset.runtime.authn import DelegatingAuth
from jobset.runtime.cache import IndexFunc, Transform
from jobset.runtime.certfiles import CertFiles
from jobset.runtime.client import Client, Resource
from jobset.runtime.controller import Controller, Reconciler
from jobset.runtime.events import EventRecorder
from jobset.runtime.gcpause import GcPauses
from jobset.runtime.health import Check, CheckResult, HttpServer, Probes, metrics_app, probes_app
from jobset.runtime.informer import Informer
from jobset.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock
from jobset.runtime.logging import get_logger
from jobset.runtime.looplag import LoopLagMonitor
from jobset.runtime.metrics import RuntimeMetrics, new_registry
from jobset.runtime.options import ManagerOptions
from jobset.runtime.ratelimit import RateLimiter
from kubeutil import tls
from kubeutil.aio import cancel_and_wait
from kubeutil.gcfreeze import GcFreezer
from kubeutil.gilswitch import favour_the_loop

__all__ = ["API_BUDGETS", "Manager"]

# Each concern's own API budget (qps, burst) over the shared connection pool; None: the
# --qps/--burst numbers, in a bucket of its own. Reconciles and informers use `client`
# itself. Separate buckets are what keeps one tenant's flood of admissions from delaying
# the lease renewal (losing the lease stops every controller) or another tenant's Jobs.
API_BUDGETS: Final[Mapping[str, tuple[float, int] | None]] = {
    "leader-election": (5.0, 10),  # a renewal every retry period (2 s) needs 0.5 qps
    "webhooks": None,  # PVC lookups of JobSet validation, certificate rotation
    "events": None,
    "metrics-auth": (20.0, 40),  # Token/SubjectAccessReviews; cached, bounded in flight
}


class Manager:
    def __init__(
        self, client: Client, options: ManagerOptions, metrics: RuntimeMetrics | None = None
    ) -> None:
        self.client = client
        self.clients: dict[str, Client] = {}
        self.options = options
        self.metrics = metrics or client.metrics or RuntimeMetrics(new_registry())
        self.informers: dict[tuple[Resource, str | None, str], Informer] = {}
        self.controllers: list[Controller] = []
        self.recorders: list[EventRecorder] = []
        self.probes = Probes()
        self.elector: LeaderElector | None = None
        self.servers: dict[str, HttpServer] = {}
        self.loop_lag = LoopLagMonitor(self.metrics.event_loop_lag_seconds)
        self.gc_pauses = GcPauses(self.metrics.gc_duration_seconds)
        self.gc_freezer = GcFreezer() if options.gc_freeze else None
        self._gc_reclaims: asyncio.Task[None] | None = None
        self.metrics_auth: DelegatingAuth | None = None
        self.metrics_cert: tls.ServingCert | None = None
        self._metrics_cert_source: tls.ServingCert | None = None
        self._metrics_cert_files: CertFiles | None = None
        self._stop = asyncio.Event()
        self._shutdown_hooks: list[Callable[[], Awaitable[None]]] = []
        self._lost = False
        self._shutting_down = False
        self._controllers_started = False
        self.log = get_logger("manager")
        self.probes.liveness["ping"] = lambda: CheckResult(True)
        self.probes.liveness["informers"] = self._informers_running
        self.probes.readiness["informers-synced"] = self._informers_synced
        self.probes.readiness["shutdown"] = lambda: CheckResult(
            not self._shutting_down, "shutting down" if self._shutting_down else ""
        )
        self.probes.readiness["apiserver"] = self._apiserver_check
        if options.leader_elect:
            self.probes.readiness["leader-election"] = self._leader_check

    @classmethod
    async def create(cls, options: ManagerOptions) -> Manager:
        """A manager with a fresh metrics registry and a client from `options.kubeconfig`."""
        metrics = RuntimeMetrics(new_registry())
        client = await Client.connect(
            options.kubeconfig, qps=options.qps, burst=options.burst, metrics=metrics
        )
        return cls(client, options, metrics)

    # ------------------------------------------------------------------ building

    def informer(
        self,
        resource: Resource,
        *,
        transform: Transform | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        label_selector: str = "",
        **kwargs: object,
    ) -> Informer:
        """The shared informer for `resource` (in the manager's namespace), made on first use."""
        key = (resource, self.options.namespace, label_selector)
        inf = self.informers.get(key)
        if inf is None:
            inf = Informer(
                self.client,
                resource,
                namespace=self.options.namespace,
                label_selector=label_selector,
                transform=transform,
                indexers=indexers,
                **kwargs,  # type: ignore[arg-type]
            )
            self.informers[key] = inf
            return inf
        if transform is not None and transform is not inf.transform:
            raise ValueError(f"informer for {resource} already exists with another transform")
        if indexers:
            missing = {k: v for k, v in indexers.items() if not inf.store.has_indexer(k)}
            inf.add_indexers(missing)
        return inf

    def controller(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        concurrency: int | None = None,
        rate_limiter: RateLimiter[Hashable] | None = None,
    ) -> Controller:
        ctrl = Controller(
            name,
            reconcile,
            concurrency=concurrency or self.options.concurrency,
            rate_limiter=rate_limiter,
            metrics=self.metrics,
            reconcile_timeout=self.options.reconcile_timeout,
        )
        self.controllers.append(ctrl)
        return ctrl

    def client_for(self, concern: str) -> Client:
        """The client of one concern of `API_BUDGETS`, with its own token bucket."""
        derived = self.clients.get(concern)
        if derived is None:
            budget = API_BUDGETS[concern] or (self.options.qps, self.options.burst)
            derived = self.clients[concern] = self.client.with_budget(*budget)
        return derived

    def recorder(self, component: str) -> EventRecorder:
        rec = EventRecorder(self.client_for("events"), component, metrics=self.metrics)
        self.recorders.append(rec)
        return rec

    # Every request failing (connection errors, 5xx) for this long makes the replica unready.
    API_UNREACHABLE_AFTER = 5.0

    def _apiserver_check(self) -> CheckResult:
        since = self.client.failing_since
        if since is None:
            return CheckResult(True)
        failing = time.monotonic() - since
        if failing < self.API_UNREACHABLE_AFTER:
            return CheckResult(True)
        return CheckResult(
            False, f"API server unreachable for {failing:.0f}s ({self.client.last_failure})"
        )

    def add_shutdown_hook(self, hook: Callable[[], Awaitable[None]]) -> None:
        """`hook` is awaited while stopping, after the controllers stopped and the lease was
        released, before the informers, servers and client stop (what it serves from is
        still there): the webhook server's drain."""
        self._shutdown_hooks.append(hook)

    def add_readiness_check(self, name: str, check: Check) -> None:
        self.probes.readiness[name] = check

    def add_health_check(self, name: str, check: Check) -> None:
        self.probes.liveness[name] = check

    # ------------------------------------------------------------------ checks

    def _informers_synced(self) -> CheckResult:
        pending = [str(k[0]) for k, i in self.informers.items() if not i.has_synced()]
        return CheckResult(not pending, f"not synced: {', '.join(pending)}" if pending else "")

    def _informers_running(self) -> CheckResult:
        if not self._started_informers:
            return CheckResult(True, "not started")
        dead = [str(k[0]) for k, i in self.informers.items() if not i.running]
        return CheckResult(not dead, f"stopped: {', '.join(dead)}" if dead else "")

    def _leader_check(self) -> CheckResult:
        e = self.elector
        if e is None:
            return CheckResult(False, "not started")
        if e.state == "leading":
            return CheckResult(True, f"leading as {e.config.identity}")
        if e.standing_by():
            return CheckResult(True, f"standby, leader is {e.leader}")
        if e.state == "standby":
            return CheckResult(False, f"lease not observed for {e.config.lease_duration}s")
        return CheckResult(False, f"state {e.state}")

    _started_informers = False

    # ------------------------------------------------------------------ running

    def stop(self) -> None:
        self._stop.set()

    async def wait_stopping(self) -> None:
        """Return once stopping has begun (a signal, `stop()`, or the lease lost)."""
        await self._stop.wait()

    async def run_until_signal(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        try:
            return await self.run()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    async def run(self) -> int:
        """Run until `stop()` (returns 0) or the lease is lost (returns 1)."""
        interval = self.options.switch_interval
        with favour_the_loop(interval) if interval else contextlib.nullcontext():
            self.log.info(
                "starting",
                gc_freeze=self.gc_freezer is not None,
                gil_switch_interval=sys.getswitchinterval(),
            )
            return await self._run()

    async def _run(self) -> int:
        opts = self.options
        elector_task: asyncio.Task[object] | None = None
        try:
            self.loop_lag.start()
            self.gc_pauses.install()
            if self.gc_freezer is not None:
                self.gc_freezer.install()
                self._gc_reclaims = asyncio.create_task(self.gc_freezer.run(), name="gc reclaim")
            await self._start_servers()
            self._started_informers = True
            for inf in self.informers.values():
                inf.start()
            if not await self._wait_for_sync():
                self.log.error("caches did not sync", timeout=opts.cache_sync_timeout)
                return 1
            if opts.leader_elect:
                cfg = LeaderElectionConfig(
                    lease_name=opts.leader_election_id,
                    lease_namespace=opts.leader_election_namespace,
                    identity=opts.identity,
                    lease_duration=opts.lease_duration,
                    renew_deadline=opts.renew_deadline,
                    retry_period=opts.retry_period,
                )
                self.elector = LeaderElector(
                    cfg,
                    LeaseLock(
                        self.client_for("leader-election"), cfg.lease_namespace, cfg.lease_name
                    ),
                    on_started_leading=self._start_controllers,
                    on_stopped_leading=self._leadership_over,
                    metrics=self.metrics,
                )
                elector_task = asyncio.create_task(self.elector.run(), name="leader election")
            else:
                self._start_controllers()
            await self._stop.wait()
            return 1 if self._lost else 0
        finally:
            await self._shutdown(elector_task)

    async def _wait_for_sync(self) -> bool:
        async def all_synced() -> bool:
            for inf in self.informers.values():
                await inf.wait_for_sync()
            return True

        async def stopped() -> bool:
            await self._stop.wait()
            return False

        stop = asyncio.create_task(stopped())
        synced = asyncio.create_task(all_synced())
        done, _ = await asyncio.wait(
            {stop, synced}, timeout=self.options.cache_sync_timeout, return_when="FIRST_COMPLETED"
        )
        stop.cancel()
        if synced not in done:
            await cancel_and_wait(synced)
            return False
        if self.gc_freezer is not None:
            self.gc_freezer.collect_and_freeze()  # the imports and the synced caches
        self.log.info("caches synced", informers=len(self.informers))
        return True

    def _start_controllers(self) -> None:
        if self._shutting_down:
            return
        self._controllers_started = True
        for rec in self.recorders:
            rec.start()
        for ctrl in self.controllers:
            ctrl.start()

    def _leadership_over(self) -> None:
        if self.elector is not None and self.elector.state == "lost":
            self._lost = True
            self.stop()

    # Names the in-memory certificate of the secure metrics server is valid for (nobody can
    # verify it against a CA anyway; Prometheus is configured to skip verification).
    SELF_SIGNED_HOSTS = ("localhost", "127.0.0.1")

    def use_metrics_cert(self, serving: tls.ServingCert) -> None:
        """Have the secure metrics server present `serving`, which something else keeps
        filled (the webhooks' internal certificate rotator issues it from its CA), unless
        --metrics-cert-dir names files. Until it holds a certificate, handshakes fail."""
        self._metrics_cert_source = serving

    async def _metrics_tls(self) -> ssl.SSLContext:
        """The secure metrics server's certificate: from --metrics-cert-dir, reloaded when it
        changes; else the one given to `use_metrics_cert`; else self-signed in memory
        (controller-runtime's behaviour without CertDir)."""
        cert_dir = self.options.metrics_cert_dir
        if not cert_dir and self._metrics_cert_source is not None:
            self.metrics_cert = self._metrics_cert_source
            return self.metrics_cert.context
        serving = tls.ServingCert()
        if cert_dir:
            files = CertFiles(Path(cert_dir), serving, metrics=self.metrics)
            try:
                await files.start()
            except (OSError, ValueError, ssl.SSLError) as exc:
                raise ValueError(
                    f"--metrics-cert-dir {cert_dir}: cannot load tls.crt/tls.key: {exc}"
                ) from exc
            self._metrics_cert_files = files
        else:
            _, cert, key = tls.self_signed(list(self.SELF_SIGNED_HOSTS))
            serving.update(cert, key)
        self.metrics_cert = serving
        return serving.context

    async def _start_servers(self) -> None:
        opts = self.options
        if opts.metrics_port is not None:
            if opts.metrics_secure:
                self.metrics_auth = DelegatingAuth(self.client_for("metrics-auth"))
                self.servers["metrics"] = HttpServer(
                    metrics_app(self.metrics.registry, self.metrics_auth),
                    opts.bind_address,
                    opts.metrics_port,
                    ssl_context=await self._metrics_tls(),
                )
            else:
                self.servers["metrics"] = HttpServer(
                    metrics_app(self.metrics.registry), opts.bind_address, opts.metrics_port
                )
        if opts.health_port is not None:
            self.servers["health"] = HttpServer(
                probes_app(self.probes), opts.bind_address, opts.health_port
            )
        for name, server in self.servers.items():
            await server.start()
            self.log.info(
                "serving",
                server=name,
                address=server.host,
                port=server.port,
                tls=server.ssl_context is not None,
            )

    async def _shutdown(self, elector_task: asyncio.Task[object] | None) -> None:
        self._shutting_down = True
        t0 = time.monotonic()
        deadline = self.options.graceful_shutdown_timeout
        self.log.info("stopping", lost_leadership=self._lost)
        grace = 0.0 if self._lost else deadline  # see the module docstring
        results = await asyncio.gather(
            *(c.stop(grace_period=grace) for c in self.controllers), return_exceptions=True
        )
        if elector_task is not None and self.elector is not None:
            self.elector.stop()  # releases the lease if we held it
            with contextlib.suppress(Exception):
                await asyncio.wait_for(elector_task, max(1.0, deadline - (time.monotonic() - t0)))
        for rec in self.recorders:
            await rec.stop(flush_timeout=max(0.1, min(2.0, deadline - (time.monotonic() - t0))))
        for hook in self._shutdown_hooks:
            try:
                await hook()
            except Exception:
                self.log.exception("shutdown hook failed")
        for inf in self.informers.values():
            await inf.stop()
        for server in self.servers.values():
            await server.stop()
        if self._metrics_cert_files is not None:
            await self._metrics_cert_files.stop()
        await self.loop_lag.stop()
        self.gc_pauses.uninstall()
        await cancel_and_wait(self._gc_reclaims)
        if self.gc_freezer is not None:
            self.gc_freezer.uninstall()
        await self.client.close()
        self.log.info(
            "stopped",
            seconds=round(time.monotonic() - t0, 3),
            drained=all(r is True for r in results),
        )
