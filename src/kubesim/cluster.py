"""`SimCluster`: the simulated API server and its simulated components, started together.

Used by `jobset sim`, by `jobset dev`, and by tests and benchmarks that want a cluster
in-process. Everything a client sees goes through HTTPS on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesim.apiserver import certs
from kubesim.apiserver.core.admission import WebhookAdmission
from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import ObjectHooks, Request, component_request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.faults import FaultPlan
from kubesim.apiserver.http.auth import IssuedToken
from kubesim.apiserver.http.pods import NodeServices
from kubesim.apiserver.http.server import ApiHttpServer
from kubesim.apiserver.registry import catalogue
from kubesim.apiserver.registry.apiextensions.customresourcedefinition import CrdHooks
from kubesim.apiserver.registry.features import FeatureGates, check_gates
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.storage.storageclass import DefaultStorageClassHook
from kubesim.base.events import EventSink
from kubesim.base.podhost import simulated_pod_host
from kubesim.controllers.disruption import evict
from kubesim.controllers.endpoints import resolve_service
from kubesim.controllers.gc import GarbageCollector
from kubesim.controllers.protection import ProtectionHook
from kubesim.machinery.errors import ApiError
from kubeutil.aio import cancel_and_wait

if TYPE_CHECKING:
    from kubesim.dns import ClusterDns
    from kubesim.images.store import ImageStore
    from kubesim.kubelet.imagepull import ImagePuller

SIM_LEVELS = ("pods", "jobs", "none")
BOOT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class SimOptions:
    port: int = 0
    kubeconfig: str | None = None
    sim_level: str = "pods"
    nodes: str = ""
    time_scale: float = 1.0
    seed: int = 0
    faults: str | None = None
    data_dir: str | None = None
    host: str = "127.0.0.1"
    tls: bool = True
    token: str | None = None
    bookmark_interval: float = 1.0
    history_size: int = 50_000
    # `--run-image`: image repository -> directory; such containers run as real processes
    run_images: dict[str, str] = field(default_factory=dict)
    # `--load-image`: image archives loaded at start; their images' pods run in their roots
    load_images: list[str] = field(default_factory=list)
    # `--kube-feature-gates`: Kubernetes feature gates of the API server
    # (`apiserver/registry/features.py` lists the ones modelled), all off by default as in Kubernetes.
    kube_feature_gates: dict[str, bool] = field(default_factory=dict)
    # Events from the simulated components (kubectl describe); `--no-events` turns them off
    events: bool = True
    # `--cluster-domain`: the DNS domain of Services and pods (kubelet's clusterDomain)
    cluster_domain: str = "cluster.local"
    # `--dns-address`: where cluster DNS also listens (HOST, PORT), beside the pod network's
    # gateway with --run-image; without either there is no DNS server
    dns_addresses: list[tuple[str, int]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class SimCluster:
    """One simulated cluster: start() it, point clients at `kubeconfig`, stop() it."""

    def __init__(self, options: SimOptions | None = None) -> None:
        self.options = options or SimOptions()
        if self.options.sim_level not in SIM_LEVELS:
            raise ValueError(
                f"--sim-level must be one of {', '.join(SIM_LEVELS)}, not {self.options.sim_level!r}"
            )
        from kubesim.dns import check_cluster_domain

        self.cluster_domain = check_cluster_domain(self.options.cluster_domain)
        for flag, given in (
            ("--run-image", self.options.run_images),
            ("--load-image", self.options.load_images),
        ):
            if given and self.options.sim_level != "pods":
                raise ValueError(f"{flag} needs --sim-level pods")
        self.rng = random.Random(self.options.seed)
        check_gates(self.options.kube_feature_gates)
        self.gates = FeatureGates(self.options.kube_feature_gates)
        self.registry = Registry(catalogue.served_types(self.gates))
        self.store = Store(history_size=self.options.history_size)
        # What the API server presents to webhooks (`start()` issues it from the cluster's CA).
        self.client_cert: tuple[bytes, bytes] | None = None
        self.runtime: Any = None  # kubelet.processes.ProcessRuntime with --run-image
        self.admission = WebhookAdmission(
            self.registry, self.store, resolve_service, self._pod_host, lambda: self.client_cert
        )
        self.core = self._api_core()
        self.token = self.options.token or certs.new_token()
        # The CA first: with --data-dir, state another user could have written is refused
        # before anything starts (and the admin token of an earlier run is reused).
        self._identity = self._identity_ca() if self.options.tls else None
        self.gc = GarbageCollector(self.core)
        self.events: EventSink | None = EventSink(self.core) if self.options.events else None
        self.sa_tokens: dict[str, IssuedToken] = {}
        self.scheduler: Any = None  # controllers.scheduler.loop.Scheduler at --sim-level pods
        self.kubelet: Any = None  # kubelet.kubelet.Kubelet at --sim-level pods
        self.images: ImageStore | None = None  # loaded images, at sim level pods
        self._node_components()
        self.http = ApiHttpServer(
            self.core,
            self.token,
            self.options.bookmark_interval,
            nodes=self._node_services(),
            faults=self._fault_plan(),
            sa_tokens=self.sa_tokens,
            debug_views={"scheduler": self.scheduler.debug_report} if self.scheduler else None,
        )
        self.components: list[Any] = []
        self.dns: ClusterDns | None = None  # with --run-image or --dns-address
        self._runner: web.AppRunner | None = None
        self._background: list[asyncio.Task[None]] = []
        self._scratch: list[Path] = []  # directories of this run, removed by stop()
        self.volumes_root: Path | None = None
        self.ca_pem = b""
        self.url = ""
        self.port = 0
        self.started_at = 0.0

    def _api_core(self) -> ApiCore:
        """The API semantics with this cluster's strategies, hooks and admission chain."""
        hooks: list[ObjectHooks] = [
            CrdHooks(self.registry, self.store),
            DefaultStorageClassHook(self.store),
        ]
        if self.options.sim_level != "none":
            hooks.append(ProtectionHook())  # with the storage controllers (`_start_storage`)
        return ApiCore(
            self.registry,
            self.store,
            strategies=catalogue.strategies(self.gates, self.store),
            hooks=hooks,
            admission=self.admission,
            # the kubelet confirms a pod's deletion once its containers stopped
            graceful_pod_deletion=self.options.sim_level == "pods",
        )

    def _node_components(self) -> None:
        """The image store, the container runtime (--run-image, --load-image), scheduler and
        kubelet at --sim-level pods:
        built before the API server, which serves their logs, streams and debug view."""
        if self.options.sim_level != "pods":
            return
        from kubesim.controllers.scheduler.loop import Scheduler
        from kubesim.kubelet.kubelet import Kubelet

        self.images = self._image_store()
        if self.options.run_images or self.options.load_images:
            from kubesim.kubelet.processes import ProcessRuntime

            self.runtime = ProcessRuntime(
                self.core,
                self.sa_tokens,
                self.options.run_images,
                cluster_domain=self.cluster_domain,
                images=self.images,  # what a pod's image runs (images/types.py)
            )
        self.scheduler = Scheduler(self.core, self.rng, events=self.events, gates=self.gates)
        self.kubelet = Kubelet(
            self.core,
            time_scale=self.options.time_scale,
            rng=self.rng,
            runtime=self.runtime,
            events=self.events,
            puller=self._image_puller(),
        )

    def _image_puller(self) -> ImagePuller | None:
        """imagePullPolicy for the repositories of loaded images, where the runtime runs
        them (a `--run-image` mapping pulls nothing)."""
        runtime = self.runtime
        if runtime is None or self.images is None:
            return None
        from kubesim.kubelet.imagepull import ImagePuller

        return ImagePuller(
            self.images,
            self.options.time_scale,
            exempt=lambda container: runtime.directory_for(container) is not None,
        )

    def _node_services(self) -> NodeServices:
        """What the API server asks of the nodes: logs, exec/attach/port-forward, eviction.
        The API server imports no simulated controller: eviction under the budgets is
        plugged in here, as is how admission reaches a webhook's Service (`_pod_host`)."""
        if self.kubelet is None:
            return NodeServices(evict=evict)
        if self.runtime is None:
            return NodeServices(log_source=self.kubelet.logs, evict=evict)
        from kubesim.kubelet.podexec import RuntimeStreams

        return NodeServices(
            log_source=self.kubelet.logs,
            log_stream=self.runtime.log_response,
            pod_streams=RuntimeStreams(self.runtime),
            evict=evict,
        )

    def _fault_plan(self) -> FaultPlan | None:
        """`--faults`: the seeded fault plan the API server injects (armed by start())."""
        if not self.options.faults:
            return None
        from kubesim.apiserver.faults import load_faults

        return load_faults(self.options.faults, seed=self.options.seed)

    def _pod_host(self, pod: Mapping[str, Any], ip: str) -> str:
        """How the API server dials a webhook's pod: through the runtime with real pods."""
        if self.runtime is not None:
            return str(self.runtime.pod_host(pod, ip))
        return simulated_pod_host(pod, ip)

    @property
    def kubeconfig(self) -> str:
        assert self.options.kubeconfig is not None
        return self.options.kubeconfig

    def req(self) -> Request:
        return component_request("jobset-sim")

    async def start(self) -> None:
        opts = self.options
        self.started_at = time.monotonic()
        identity = self._identity
        if opts.data_dir:
            from kubesim.apiserver.core.persistence import Persistence

            self.persistence = Persistence(Path(opts.data_dir), self.core)
            self.persistence.load()
        await self._bootstrap()
        plan = self.http.faults
        if isinstance(plan, FaultPlan):
            plan.arm(time.monotonic())
            if plan.compaction_interval:
                self._background.append(
                    asyncio.create_task(self._compact_every(plan.compaction_interval))
                )
        self.gc.start()
        hosts = ["localhost", opts.host]
        await self._start_images()
        if self.runtime is not None:
            hosts.append(await self.runtime.open())  # pods reach the API server there
        await self._start_dns()
        self._start_components()
        ssl_ctx = None
        if identity is not None:
            ca_cert, ca_key = identity
            cert, key = certs.make_serving_cert(ca_cert, ca_key, hosts)
            ssl_ctx = certs.server_ssl_context(cert, key)
            self.ca_pem = ca_cert
            # What the API server presents to webhooks, and where it says which CA signed it.
            self.client_cert = certs.make_client_cert(ca_cert, ca_key)
            await self._publish_authentication(ca_cert)
        self._runner = web.AppRunner(self.http.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, opts.host, opts.port, ssl_context=ssl_ctx, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else opts.port
        scheme = "https" if opts.tls else "http"
        self.url = f"{scheme}://{opts.host}:{self.port}"
        if self.runtime is not None:
            self.runtime.serve_api(await self._serve_pods(ssl_ctx), self.ca_pem)
        if self.dns is not None:
            from kubesim.dns import ApiEndpoint

            api = (self.runtime.api_host, self.runtime.api_port) if self.runtime else None
            self.dns.records.set_api(ApiEndpoint(*(api or (opts.host, self.port))))
        if opts.kubeconfig:
            certs.write_kubeconfig(opts.kubeconfig, self.url, self.ca_pem, self.token)

    def _image_store(self) -> ImageStore:
        """The image store of --sim-level pods: under the data directory, kept across
        restarts, or the user's cache of unpacked images with this run's own names."""
        from kubesim.images.store import ImageStore, cache_dir

        if self.options.data_dir:
            return ImageStore(Path(self.options.data_dir) / "images")
        return ImageStore(cache_dir(), keep_names=False)

    async def _start_images(self) -> None:
        """`--load-image` archives loaded, and `POST /sim/images` to load more into the
        running cluster (admin only); `GET /debug/images` lists them."""
        store = self.images
        if store is None:
            return
        from kubesim.images.endpoint import LOAD_PATH, load_handler

        for archive in self.options.load_images:
            await store.load(Path(archive))
        self.http.admin_routes[("POST", LOAD_PATH)] = load_handler(
            store, lambda: self.runtime is not None
        )
        self.http.debug_views["images"] = lambda: {
            "images": [{"name": r.name, "digest": r.digest} for r in store.images()]
        }

    async def _start_dns(self) -> None:
        """Cluster DNS on the pod network's gateway (UDP and TCP 53: where real pods'
        resolv.conf points) and on each `--dns-address`; none without either."""
        if self.runtime is None and not self.options.dns_addresses:
            return
        from kubesim.dns import ClusterDns

        addresses = list(self.options.dns_addresses)
        if self.runtime is not None:
            addresses.insert(0, (self.runtime.api_host, 53))
        self.dns = ClusterDns(self.store, self.cluster_domain, addresses[0][0])
        self.dns.start()
        for host, port in addresses:
            await self.dns.serve(host, port)

    async def _serve_pods(self, ssl_ctx: Any) -> int:
        """Also listen on the pod bridge's gateway, the API address real pods are given."""
        assert self._runner is not None
        for port in (self.port, 0):
            site = web.TCPSite(self._runner, self.runtime.api_host, port, ssl_context=ssl_ctx)
            try:
                await site.start()
            except OSError:
                continue
            sockets = getattr(site._server, "sockets", None) or []
            return int(sockets[0].getsockname()[1]) if sockets else port
        raise OSError(f"cannot listen on {self.runtime.api_host}")

    async def _publish_authentication(self, ca_pem: bytes) -> None:
        """`kube-system/extension-apiserver-authentication`, as kube-apiserver publishes it for
        extension API servers and webhooks that authenticate it: the CA of client certificates
        (`client-ca-file`) and of its own proxy/webhook client certificate
        (`requestheader-client-ca-file`, with the names allowed to use it). One CA signs all
        of them here; a real cluster has a separate front-proxy CA."""
        rt = self.registry.get("", "v1", "configmaps")
        assert rt is not None
        data = {
            "client-ca-file": ca_pem.decode(),
            "requestheader-client-ca-file": ca_pem.decode(),
            "requestheader-allowed-names": f'["{certs.API_SERVER_CLIENT_NAME}"]',
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        }
        name, namespace = "extension-apiserver-authentication", "kube-system"
        current = self.core.try_get(rt, namespace, name)
        if current is None:
            obj = {"metadata": {"name": name, "namespace": namespace}, "data": data}
            await self.core.create(rt, namespace, obj, self.req())
        elif current.get("data") != data:
            await self.core.update(rt, namespace, name, {**current, "data": data}, self.req())

    def _identity_ca(self) -> tuple[bytes, bytes]:
        """The CA (and, with `--data-dir`, the admin token) of this cluster.

        With a data directory they are kept in `DIR/pki/` and reused on restart, as a real
        API server keeps its CA and credentials: clients that loaded the kubeconfig before a
        restart reconnect by themselves.
        """
        if not self.options.data_dir:
            return certs.make_ca("jobset-sim-ca")
        from kubesim.apiserver.core.statedir import check_existing, private_dir, write_private

        private_dir(Path(self.options.data_dir))
        pki = private_dir(Path(self.options.data_dir) / "pki")
        crt, key, tok = pki / "ca.crt", pki / "ca.key", pki / "token"
        for path in (crt, key, tok):
            check_existing(path)  # another user's CA or token is never trusted
        if crt.exists() and key.exists():
            ca = (crt.read_bytes(), key.read_bytes())
        else:
            ca = certs.make_ca("jobset-sim-ca")
            for path, data in ((key, ca[1]), (crt, ca[0])):
                write_private(path, data)
        if self.options.token is None:
            if tok.exists() and tok.read_text().strip():
                self.token = tok.read_text().strip()
            else:
                write_private(tok, self.token.encode())
        return ca

    def _start_components(self) -> None:
        from kubesim.controllers.apiservices import APIServiceAvailability
        from kubesim.controllers.disruption import DisruptionController
        from kubesim.controllers.endpoints import EndpointsController
        from kubesim.controllers.serviceaccounts import ServiceAccountsController

        if self.events is not None:
            self.events.start()

        # API machinery of kube-controller-manager that runs at every level, as the GC does.
        self.components += [
            EndpointsController(self.core),
            DisruptionController(self.core),
            ServiceAccountsController(self.core),
            APIServiceAvailability(self.core),
        ]
        level = self.options.sim_level
        if level == "none":
            for component in self.components:
                component.start()
            return
        from kubesim.controllers.job import JobController
        from kubesim.controllers.jobsim import StatusOnly

        self._start_storage()
        jobs = JobController(
            self.core,
            time_scale=self.options.time_scale,
            events=self.events,
            status_only=StatusOnly(self.options.time_scale, self.rng) if level == "jobs" else None,
        )
        self.components.append(jobs)
        if level == "pods":
            from kubesim.controllers.deployment import DeploymentController
            from kubesim.controllers.replicaset import (
                REPLICATION_CONTROLLERS,
                ReplicaSetController,
            )

            self.components.append(self.scheduler)
            self.components += [
                DeploymentController(self.core),
                ReplicaSetController(self.core),
                ReplicaSetController(self.core, REPLICATION_CONTROLLERS),
            ]
            self.components.append(self.kubelet)
        for component in self.components:
            component.start()

    def _start_storage(self) -> None:
        """The PV controller, the local-path provisioner (its volumes under the data
        directory, kept across restarts, or a directory of this run, removed by stop()) and
        storage object in-use protection."""
        from kubesim.controllers import protection
        from kubesim.controllers.localpath import LocalPathProvisioner
        from kubesim.controllers.persistentvolume import PersistentVolumeController

        if self.options.data_dir:
            root = Path(self.options.data_dir) / "volumes"
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(tempfile.mkdtemp(prefix="jobset-sim-volumes-"))
            self._scratch.append(root)
        self.volumes_root = root
        self.components += [
            PersistentVolumeController(self.core, self.events),
            LocalPathProvisioner(self.core, root, self.events),
            protection.ProtectionController(self.core),
        ]

    async def _compact_every(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            rv = self.store.rv
            for rs in self.store.resources.values():
                rs.compact(rv)
            plan = self.http.faults
            if plan is not None:
                plan.record("compaction")

    async def _bootstrap(self) -> None:
        ns_rt = self.registry.get("", "v1", "namespaces")
        svc_rt = self.registry.get("", "v1", "services")
        sa_rt = self.registry.get("", "v1", "serviceaccounts")
        node_rt = self.registry.get("", "v1", "nodes")
        assert ns_rt and svc_rt and sa_rt and node_rt
        for name in BOOT_NAMESPACES:
            with contextlib.suppress(ApiError):
                await self.core.create(ns_rt, "", {"metadata": {"name": name}}, self.req())
        with contextlib.suppress(ApiError):
            await self.core.create(
                svc_rt,
                "default",
                {
                    "metadata": {
                        "name": "kubernetes",
                        "labels": {"component": "apiserver", "provider": "kubernetes"},
                    },
                    "spec": {
                        "clusterIP": "10.96.0.1",
                        "ports": [{"name": "https", "port": 443, "targetPort": 6443}],
                    },
                },
                self.req(),
            )
        for name in BOOT_NAMESPACES:
            with contextlib.suppress(ApiError):
                await self.core.create(sa_rt, name, {"metadata": {"name": "default"}}, self.req())
        if self.options.sim_level != "none":
            await self._install_standard_class()
        if self.options.nodes:
            from kubesim.nodespec import parse_node_spec

            for node in parse_node_spec(self.options.nodes):
                with contextlib.suppress(ApiError):
                    await self.core.create(node_rt, "", node, self.req())

    async def _install_standard_class(self) -> None:
        """kind's default class, `standard` (local-path, WaitForFirstConsumer), unless a
        restart from the data directory brings it back."""
        from kubesim.controllers.localpath import standard_class

        sc_rt = self.registry.get("storage.k8s.io", "v1", "storageclasses")
        assert sc_rt is not None
        with contextlib.suppress(ApiError):
            await self.core.create(sc_rt, "", standard_class(), self.req())

    async def stop(self) -> None:
        for component in reversed(self.components):
            await component.stop()
        if self.events is not None:
            await self.events.stop()
        if self.dns is not None:
            await self.dns.stop()
        if self.runtime is not None:
            await self.runtime.close()
        await self.gc.stop()
        await cancel_and_wait(*self._background)
        for rs in self.store.resources.values():
            for w in list(rs.watchers):
                w.close()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.admission.close()
        persistence = getattr(self, "persistence", None)
        if persistence is not None:
            persistence.close()
        for directory in self._scratch:
            shutil.rmtree(directory, ignore_errors=True)
