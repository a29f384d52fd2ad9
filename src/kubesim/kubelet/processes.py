"""Real processes for the images named with `--run-image REPOSITORY=DIR`.

The simulated kubelet (`kubelet.py`) keeps its state machine (start, exit, restart with
CrashLoopBackOff, termination, status); for a container whose image repository is mapped it
asks this runtime to run the container for real instead of a simulated program:

- the pod gets a network namespace on this simulator's bridge (`network.py`), its IP is
  `status.podIP`;
- the pod gets the kubelet's /etc/hosts, /etc/resolv.conf and /etc/hostname (`podfiles.py`),
  written once into its directory;
- each container instance is an OCI bundle run by runc (`runc.py`): `config.json` built as
  containerd's CRI plugin builds it (`ocispec.py`: namespaces with the pod's network
  namespace, capabilities, seccomp, cgroup values, masked paths), a root of its own
  (`hostroot.py`, or an image's unpacked root under an overlay), volumes as bind mounts with
  subPaths checked (`subpaths.py`); the bundle goes when the instance ends. The command and
  args are resolved with DIR first on PATH; with no `command`, `DIR/entrypoint` plays the
  image's ENTRYPOINT (args are passed to it) and without one the container fails with
  StartError; a loaded image's container runs what its config says (`images/resolve.py`);
- its output goes to a log file per instance (`kubectl logs`, `--previous`, `-f`);
- probes run on a task per container (`probes.py`) and set readiness, or kill the container;
- deletion sends SIGTERM to the container's PID 1 (through runc), SIGKILL after the grace
  period (wall seconds: `--time-scale` does not shorten a real process's shutdown); when PID 1
  ends, the kernel ends every other process of the container;
- Secret / ConfigMap / projected / downwardAPI volumes are re-published every
  `VOLUME_SYNC` seconds, so updates reach running containers as in Kubernetes.

When the pod ends, its processes are killed and its namespace removed; when the pod object is
deleted, its directory (volumes and logs) goes too; `close()` removes everything.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import json
import math
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import aiohttp
import structlog
from aiohttp import web

from kubesim.apiserver import reviews
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.base.podhost import simulated_pod_host
from kubesim.images import resolve
from kubesim.images.process import ProcessError
from kubesim.images.types import ImageLookup, ImageRecord
from kubesim.kubelet import (
    containerlogs,
    hostroot,
    network,
    ocispec,
    podfiles,
    probes,
    runc,
    security,
    subpaths,
)
from kubesim.kubelet.cri import NOT_YET, CreateError
from kubesim.kubelet.envvars import ConfigError, container_env, expand, service_env
from kubesim.kubelet.volumes import (
    MountError,
    checked_volume,
    claim_directory,
    container_mounts,
    publish,
    volume_files,
)
from kubesim.programs import Program

if TYPE_CHECKING:
    from kubesim.apiserver.core.apicore import ApiCore
    from kubesim.apiserver.http.auth import IssuedToken

__all__ = [
    "NOT_YET",
    "ProcessRuntime",
    "Sandbox",
    "image_repository",
    "parse_run_images",
    "release_bundle",
]

log = structlog.get_logger("sim.processes")

HOST_RESOLV_CONF: Final = "/etc/resolv.conf"  # the node's, for dnsPolicy Default
DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VOLUME_SYNC: Final = 2.0  # seconds between re-publications of Secret/ConfigMap volumes
CONFIG_RETRY: Final = 1.0  # seconds before retrying a container that could not be configured
STOP_GRACE: Final = 2.0  # seconds the simulator's own shutdown gives processes after SIGTERM
START_ERROR: Final = 128
OOM_EXIT: Final = 137  # SIGKILL, as the OOM killer ends a container's process
# Volume types the kubelet always mounts read-only.
FORCED_READ_ONLY: Final = ("configMap", "secret", "downwardAPI", "projected")

_PODS: Final[ResourceKey] = ("", "pods")
_NODES: Final[ResourceKey] = ("", "nodes")
PodKey = tuple[str, str]


def _normalize(repository: str) -> str:
    first, _, rest = repository.partition("/")
    if not rest:
        return f"docker.io/library/{repository}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{repository}"
    return repository


def image_repository(image: str) -> str:
    """The repository of an image reference, without tag or digest, normalized as the
    container runtime does (`busybox` is `docker.io/library/busybox`)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return _normalize(name)


def parse_run_images(values: list[str] | Mapping[str, str]) -> dict[str, Path]:
    """`REPOSITORY=DIR` flags (or a mapping) as repository -> directory; DIR must exist."""
    pairs: list[tuple[str, str]] = []
    if isinstance(values, Mapping):
        pairs = [(str(k), str(v)) for k, v in values.items()]
    else:
        for v in values:
            repo, sep, directory = v.partition("=")
            if not sep or not repo or not directory:
                raise ValueError(f"--run-image wants REPOSITORY=DIR, not {v!r}")
            pairs.append((repo, directory))
    out: dict[str, Path] = {}
    for repo, directory in pairs:
        path = Path(directory).resolve()
        if not path.is_dir():
            raise ValueError(f"--run-image {repo}={directory}: not a directory")
        out[image_repository(repo)] = path
    return out


@dataclass
class _Instance:
    """One run of one container: its process, log file and probes."""

    key: PodKey
    name: str
    container: Any  # the kubelet's Container, updated on exit and by probes
    run: Any  # the kubelet's PodRun
    spec: Mapping[str, Any]
    log_path: Path
    identity: dict[str, Any]
    env: dict[str, str]
    root_dir: Path  # its OCI bundle: config.json, its root, runc's log and init.pid
    cid: str = ""  # runc's container id (the status's containerID without its scheme)
    spec_json: dict[str, Any] | None = None
    proc: subprocess.Popen[bytes] | None = None
    pidfd: int = -1
    exit_code: int | None = None
    probe_task: asyncio.Task[None] | None = None
    kill_handle: asyncio.TimerHandle | None = None
    terminating: bool = False
    exited: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Sandbox:
    uid: str
    key: PodKey
    node: str
    directory: Path
    net: network.PodNetwork
    instances: dict[str, _Instance] = field(default_factory=dict)
    tokens: dict[tuple[str, int], tuple[str, float]] = field(default_factory=dict)
    closed: bool = False

    @property
    def logs(self) -> Path:
        return self.directory / "logs"

    @property
    def volumes(self) -> Path:
        return self.directory / "volumes"

    @property
    def files(self) -> Path:
        """The kubelet's /etc files of the pod."""
        return self.directory / "etc"


class ProcessRuntime:
    """Real containers for the kubelet: see the module docstring."""

    def __init__(
        self,
        core: ApiCore,
        sa_tokens: dict[str, IssuedToken],
        run_images: Mapping[str, Path | str],
        cluster_domain: str = "cluster.local",
        images: ImageLookup | None = None,
    ) -> None:
        self.core = core
        # The API server's issued ServiceAccount tokens: the pods' projected tokens join them.
        self.sa_tokens = sa_tokens
        # The cluster's DNS domain (`--cluster-domain`): pods' search path and FQDNs.
        self.cluster_domain = cluster_domain
        self.images = {image_repository(k): Path(v) for k, v in run_images.items()}
        self.image_store = images
        self.runc: runc.Runc | None = None
        self.bridge: network.Bridge | None = None
        self.api_port = 0
        self.ca_pem = b""
        self._sandboxes: dict[str, Sandbox] = {}  # pod uid -> sandbox
        self._wake: Callable[[PodKey], None] = lambda key: None
        self._session: aiohttp.ClientSession | None = None
        self._sync_task: asyncio.Task[None] | None = None
        self._cleanups: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> str:
        """Sweep leftovers of crashed runs, make this simulator's bridge; its gateway address
        (where the API server must listen too) is returned."""
        binary = runc.find_runc()
        self.bridge = await network.open_bridge()
        self.runc = runc.Runc(binary, self.bridge.state_dir, self.bridge.name)
        self.runc.start_reaper()
        return self.bridge.gateway

    @property
    def api_host(self) -> str:
        assert self.bridge is not None
        return self.bridge.gateway

    def serve_api(self, port: int, ca_pem: bytes) -> None:
        self.api_port = port
        self.ca_pem = ca_pem

    def bind(self, wake: Callable[[PodKey], None]) -> None:
        """Called by the kubelet when it starts: how to wake a pod's sync."""
        self._wake = wake
        self.core.store.listeners.append(self._on_event)
        self._session = aiohttp.ClientSession()
        self._sync_task = asyncio.create_task(self._sync_volumes(), name="sim-volume-sync")

    async def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.store.listeners.remove(self._on_event)
        if self._sync_task is not None:
            self._sync_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sync_task
        for sandbox in list(self._sandboxes.values()):
            for inst in sandbox.instances.values():
                self._signal(inst, signal.SIGTERM)
        running = [
            i.exited.wait()
            for s in self._sandboxes.values()
            for i in s.instances.values()
            if i.exit_code is None and i.proc is not None
        ]
        if running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*running), STOP_GRACE)
        for uid in list(self._sandboxes):
            await self._teardown(uid, remove_dir=True)
        for task in list(self._cleanups):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._session is not None:
            await self._session.close()
        if self.runc is not None:
            await asyncio.to_thread(self.runc.close)
            self.runc = None
        if self.bridge is not None:
            await self.bridge.close()
            self.bridge = None

    # ------------------------------------------------------------------ what is real

    def directory_for(self, container: Mapping[str, Any]) -> Path | None:
        image = str(container.get("image") or "")
        return self.images.get(image_repository(image)) if image else None

    def image_of(self, container: Mapping[str, Any]) -> ImageRecord | None:
        """The loaded image the container names (a `--run-image` mapping wins)."""
        image = str(container.get("image") or "")
        if not image or self.image_store is None or self.directory_for(container) is not None:
            return None
        return self.image_store.lookup(image)

    def claims(self, container: Mapping[str, Any]) -> bool:
        return self.directory_for(container) is not None or self.image_of(container) is not None

    def pod_host(self, pod: Mapping[str, Any], ip: str) -> str:
        """How the API server dials a pod endpoint (`WebhookAdmission.pod_host`): real pods
        at their IP in their network namespace, simulated ones at 127.0.0.1 as before."""
        return ip if ip and self.claims_pod(pod) else simulated_pod_host(pod, ip)

    def claims_pod(self, pod: Mapping[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return any(
            self.claims(c)
            for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        )

    # ------------------------------------------------------------------ sandbox

    async def prepare(self, key: PodKey, run: Any, pod: Mapping[str, Any]) -> None:
        """Make the pod's network namespace (once) and give the run its IP."""
        if self.bridge is None or not self.claims_pod(pod):
            return
        sandbox = self._sandboxes.get(run.uid)
        if sandbox is None:
            net = await self.bridge.add_pod(run.uid)
            directory = self.bridge.state_dir / "pods" / run.uid
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            (directory / "logs").mkdir(exist_ok=True)
            (directory / "volumes").mkdir(exist_ok=True, mode=0o755)
            sandbox = Sandbox(run.uid, key, run.node, directory, net)
            self._write_pod_files(sandbox, pod)
            self._sandboxes[run.uid] = sandbox
        run.pod_ip = sandbox.net.ip

    def _write_pod_files(self, sandbox: Sandbox, pod: Mapping[str, Any]) -> None:
        """The kubelet's /etc/hosts, /etc/resolv.conf and /etc/hostname of the pod; the
        cluster's nameserver is the bridge's gateway, and `Default` uses the host's file."""
        assert self.bridge is not None
        try:
            host_resolv = Path(HOST_RESOLV_CONF).read_text()
        except OSError:
            host_resolv = ""
        dns = podfiles.pod_dns(pod, self.cluster_domain, self.bridge.gateway, host_resolv)
        hostname, _ = podfiles.hostname_and_domain(pod, self.cluster_domain)
        contents = {
            "hosts": podfiles.hosts_file(pod, [sandbox.net.ip], self.cluster_domain),
            "resolv.conf": podfiles.resolv_conf(dns),
            "hostname": f"{hostname}\n",
        }
        sandbox.files.mkdir(mode=0o755, exist_ok=True)
        for name, text in contents.items():
            path = sandbox.files / name
            path.write_text(text)
            path.chmod(0o644)

    # ------------------------------------------------------------------ containers

    def start(
        self, key: PodKey, c: Any, source: Mapping[str, Any], pod: Mapping[str, Any], run: Any
    ) -> None:
        """Start container `c` of `pod` under runc. Raises ConfigError / MountError when it
        cannot be configured yet (the kubelet retries); a container that cannot run at all is
        started as an instance that ended with StartError."""
        sandbox = self._sandboxes.get(run.uid)
        if sandbox is None or self.bridge is None or self.runc is None:
            raise MountError("the pod sandbox is not ready")
        directory = self.directory_for(source)
        record = self.image_of(source)
        pod = self._with_ip(pod, sandbox)
        identity = _identity(pod, source)
        argv: list[str] | None
        if record is not None:  # the image's config decides, as containerd applies it
            argv, env = self._image_process(pod, source, record, identity)
        else:
            env = self._env(pod, source, directory, identity)
            argv = self._argv(source, env, directory)
        cid = os.urandom(32).hex()
        bundle = self._fresh_bundle(sandbox, c, cid)
        try:
            mounts = self._mounts(sandbox, pod, source, bundle)
            spec = self._oci_spec(sandbox, pod, source, identity, env, argv or [], mounts)
            self._make_root(bundle, record)
        except BaseException:
            release_bundle(bundle)
            raise
        inst = self._new_instance(sandbox, key, c, run, source, identity, env, bundle, cid)
        if not argv:
            missing = (
                "has no command"
                if directory is None
                else f"has no entrypoint here: put an executable {directory}/entrypoint"
            )
            message = f"the image {source.get('image')} {missing}, or give the container a command"
            self._ended(inst, START_ERROR, "StartError", message)
            self._release(inst)
            return
        spec["root"]["path"] = str(bundle / "rootfs")
        spec["linux"]["cgroupsPath"] = self.runc.cgroup(inst.cid)
        inst.spec_json = spec
        proc = self._launch(inst, spec)
        self._start_probes(inst, sandbox)
        log.info(
            "container process started", pod=f"{key[0]}/{key[1]}", container=c.name, pid=proc.pid
        )

    def _image_process(
        self,
        pod: Mapping[str, Any],
        source: Mapping[str, Any],
        record: ImageRecord,
        identity: dict[str, Any],
    ) -> tuple[list[str], dict[str, str]]:
        """argv and environment of a loaded image's container (`images/resolve.py`: its
        Entrypoint, Cmd, Env, WorkingDir and User as containerd applies them); `identity`
        takes the image's user and working directory. Raises CreateError as containerd
        refuses."""
        own = self._container_env(pod, source)
        expanded = {
            **source,
            "command": [expand(str(a), own) for a in source.get("command") or []],
            "args": [expand(str(a), own) for a in source.get("args") or []],
            "workingDir": expand(str(source.get("workingDir") or ""), own),
        }
        sc = source.get("securityContext") or {}
        pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
        group = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
        try:
            process = resolve.process_of(
                expanded,
                record,
                env=list(own.items()),
                hostname=podfiles.hostname_and_domain(pod, self.cluster_domain)[0],
                run_as_user=identity.get("uid"),
                run_as_group=None if group is None else int(group),
                supplemental_groups=list(identity.get("groups") or []),
            )
        except ProcessError as exc:
            raise CreateError(exc.reason, str(exc)) from None
        identity |= {"uid": process.uid, "gid": process.gid, "workdir": process.cwd}
        identity["groups"] = list(process.additional_gids)
        return list(process.argv), dict(e.partition("=")[::2] for e in process.env)

    def _argv(
        self, source: Mapping[str, Any], env: Mapping[str, str], directory: Path | None
    ) -> list[str] | None:
        """The command line of a `--run-image` container: `command` + `args`, `$(VAR)`
        expanded; DIR's `entrypoint` file plays the image's ENTRYPOINT. None when there is
        nothing to run."""
        command = [expand(str(a), env) for a in source.get("command") or []]
        args = [expand(str(a), env) for a in source.get("args") or []]
        if command:
            return command + args
        assert directory is not None
        entrypoint = directory / "entrypoint"
        if entrypoint.is_file() and os.access(entrypoint, os.X_OK):
            return [str(entrypoint), *args]
        return None

    def _fresh_bundle(self, sandbox: Sandbox, c: Any, cid: str) -> Path:
        """The OCI bundle directory of the container's next instance (a fresh writable root),
        named by its container id too: the previous instance's, with the same restart count
        after an in-place restart, may still be being removed."""
        bundle = sandbox.directory / "containers" / f"{c.name}-{c.restarts}-{cid[:12]}"
        bundle.mkdir(parents=True, mode=0o700)
        return bundle

    def _make_root(self, bundle: Path, record: ImageRecord | None) -> None:
        rootfs = bundle / "rootfs"
        if record is None:
            hostroot.make_root(rootfs)
            return
        # An image's root: an overlay whose lower layer is the image's unpacked root.
        upper, work = bundle / "upper", bundle / "work"
        for path in (rootfs, upper, work):
            path.mkdir(mode=0o755)
        subpaths.mount_overlay(record.rootfs, upper, work, rootfs)

    def _oci_spec(
        self,
        sandbox: Sandbox,
        pod: Mapping[str, Any],
        source: Mapping[str, Any],
        identity: Mapping[str, Any],
        env: Mapping[str, str],
        argv: list[str],
        mounts: list[ocispec.BindMount],
    ) -> dict[str, Any]:
        sc = source.get("securityContext") or {}
        files = [
            ocispec.BindMount(str(sandbox.files / name), f"/etc/{name}")
            for name in ("hosts", "resolv.conf", "hostname")
        ]
        qos = str((pod.get("status") or {}).get("qosClass") or "BestEffort")
        uid = identity.get("uid")
        gid = identity.get("gid")
        spec = ocispec.ContainerSpec(
            root="",
            args=argv,
            env=[f"{k}={v}" for k, v in env.items()],
            cwd=str(source.get("workingDir") or identity.get("workdir") or "/"),
            uid=0 if uid is None else int(uid),
            gid=0 if gid is None else int(gid),
            groups=list(identity.get("groups") or []),
            capabilities=security.capability_names(
                [c for c in identity.get("capabilities") or [] if c in _host_bounding_set()]
            ),
            no_new_privileges=bool(identity.get("no_new_privs")),
            read_only_root=bool(sc.get("readOnlyRootFilesystem")),
            privileged=bool(sc.get("privileged")),
            seccomp=ocispec.seccomp_mode(pod, source),
            hostname=podfiles.hostname_and_domain(pod, self.cluster_domain)[0],
            netns=str(network.NETNS_DIR / sandbox.net.netns),
            mounts=[*self._root_mounts(source), *files, *mounts],
            resources=_settable(ocispec.resources_of(source, qos)),
        )
        return ocispec.build(spec)

    def _root_mounts(self, source: Mapping[str, Any]) -> list[ocispec.BindMount]:
        if self.image_of(source) is not None:
            return []
        directory = self.directory_for(source)
        assert directory is not None
        return hostroot.host_mounts(directory)

    def _new_instance(
        self,
        sandbox: Sandbox,
        key: PodKey,
        c: Any,
        run: Any,
        source: Mapping[str, Any],
        identity: dict[str, Any],
        env: dict[str, str],
        bundle: Path,
        cid: str,
    ) -> _Instance:
        """The container's next instance, with an empty log; the previous one's probes stop,
        and the kubelet's container state says it is a real process from now on."""
        old = sandbox.instances.get(c.name)
        if old is not None:
            self._stop_probes(old)
        container_dir = sandbox.logs / c.name
        container_dir.mkdir(parents=True, exist_ok=True)
        inst = _Instance(
            key,
            c.name,
            c,
            run,
            source,
            container_dir / f"{c.restarts}.log",
            identity,
            env,
            bundle,
            cid,
        )
        inst.log_path.write_bytes(b"")
        sandbox.instances[c.name] = inst
        c.real = True
        c.ends_at = math.inf
        c.program = Program(math.inf, 0, "")
        c.container_id = f"containerd://{cid}"
        return inst

    def _launch(self, inst: _Instance, spec: dict[str, Any]) -> subprocess.Popen[bytes]:
        """`runc run` the instance's bundle; its exit is watched through a pidfd."""
        assert self.runc is not None
        with open(inst.log_path, "ab") as out:
            proc = self.runc.run(inst.cid, inst.root_dir, spec, out)
        inst.proc = proc
        inst.pidfd = os.pidfd_open(proc.pid)
        asyncio.get_running_loop().add_reader(inst.pidfd, self._on_exit, inst)
        return proc

    def _start_probes(self, inst: _Instance, sandbox: Sandbox) -> None:
        source, c = inst.spec, inst.container
        c.probe_started = not source.get("startupProbe")
        c.probe_ready = not source.get("readinessProbe")
        specs = [
            probes.ProbeSpec.of(kind, source[f"{kind}Probe"])
            for kind in probes.KINDS
            if source.get(f"{kind}Probe")
        ]
        if specs:
            inst.probe_task = asyncio.create_task(
                self._probe_loop(inst, sandbox, specs), name=f"probes-{inst.key[1]}-{c.name}"
            )

    def _with_ip(self, pod: Mapping[str, Any], sandbox: Sandbox) -> dict[str, Any]:
        status = dict(pod.get("status") or {})
        status["podIP"] = sandbox.net.ip
        status["podIPs"] = [{"ip": sandbox.net.ip}]
        return {**pod, "status": status}

    def _env(
        self,
        pod: Mapping[str, Any],
        source: Mapping[str, Any],
        directory: Path | None,
        identity: Mapping[str, Any],
    ) -> dict[str, str]:
        env = self._container_env(pod, source)
        uid = identity.get("uid")
        home = "/root"
        if uid not in (None, 0):
            try:
                home = pwd.getpwuid(int(uid)).pw_dir
            except KeyError:
                home = "/"
        base = {"PATH": DEFAULT_PATH}
        base |= {
            "HOSTNAME": podfiles.hostname_and_domain(pod, self.cluster_domain)[0],
            "HOME": home,
        }
        env = {**base, **env}
        if directory is not None:
            env["PATH"] = f"{directory}:{env['PATH']}"
        return env

    def _container_env(self, pod: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, str]:
        """The container's own environment as the kubelet resolves it (its `env` and
        `envFrom`, and the `kubernetes` Service's variables)."""
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.core.store.get(_NODES, ("", node_name)) or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        return container_env(
            pod, source, self._lookup, service_env(self.api_host, self.api_port), allocatable
        )

    def _get(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.core.store.get(("", plural), (namespace, name))

    def _lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        plural = "secrets" if kind == "Secret" else "configmaps"
        obj = self.core.store.get(("", plural), (namespace, name))
        if obj is None and kind == "ConfigMap" and name == "kube-root-ca.crt":
            return {"data": {"ca.crt": self.ca_pem.decode()}}
        return obj

    def _token(
        self, sandbox: Sandbox, namespace: str, account: str, audience: str, seconds: int
    ) -> str:
        """A ServiceAccount token for the pod, re-issued once 80% of its life has passed."""
        from kubesim.apiserver.http.auth import IssuedToken

        cached = sandbox.tokens.get((audience, seconds))
        now = time.time()
        if cached is not None and now < cached[1]:
            return cached[0]
        sa = self.core.store.get(("", "serviceaccounts"), (namespace, account))
        if sa is None:
            raise MountError(f'serviceaccount "{account}" not found')
        token = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        audiences = (audience,) if audience else tuple(reviews.API_AUDIENCES)
        # Bound to the pod, as the kubelet's projected tokens are: the pod's name and uid
        # reach admission as userInfo.extra (the in-place restart agent's policy reads them).
        self.sa_tokens[token] = IssuedToken(
            namespace,
            account,
            str(sa["metadata"].get("uid") or ""),
            audiences,
            now + seconds,
            (sandbox.key[1], sandbox.uid),
        )
        sandbox.tokens[(audience, seconds)] = (token, now + 0.8 * seconds)
        return token

    def _publish(self, sandbox: Sandbox, pod: Mapping[str, Any]) -> None:
        """Write every file-backed volume of the pod (only what changed)."""
        gid = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
        for volume in self._volumes(pod):
            name = checked_volume(str(volume.get("name") or ""))
            target = sandbox.volumes / name
            files = volume_files(
                pod,
                volume,
                self._lookup,
                lambda ns, sa, aud, sec: self._token(sandbox, ns, sa, aud, sec),
            )
            if files is not None:
                publish(target, files, gid)
            elif "hostPath" in volume or "persistentVolumeClaim" in volume:
                continue
            elif not target.exists():
                target.mkdir(mode=0o777)
                os.chmod(target, 0o777)
                if gid is not None:
                    os.chown(target, -1, int(gid))

    def _volumes(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return list((pod.get("spec") or {}).get("volumes") or [])

    def _mounts(
        self, sandbox: Sandbox, pod: Mapping[str, Any], source: Mapping[str, Any], bundle: Path
    ) -> list[ocispec.BindMount]:
        """The container's volume mounts as binds. ConfigMap, Secret, downwardAPI and
        projected volumes are read-only, as the kubelet forces; a subPath is bound from a
        checked handle (`subpaths.py`)."""
        self._publish(sandbox, pod)
        by_name = {str(v.get("name")): v for v in self._volumes(pod)}
        namespace = str(pod["metadata"].get("namespace") or "default")
        out = []
        for i, m in enumerate(container_mounts(pod, source)):
            volume = by_name[m.volume]
            read_only = m.read_only or any(k in volume for k in FORCED_READ_ONLY)
            if "persistentVolumeClaim" in volume:
                # The claim's volume, shared by every pod that mounts it and kept after them.
                path, claim_read_only = claim_directory(volume, namespace, self._get)
                read_only = read_only or claim_read_only
                volume = {"hostPath": {"path": path, "type": "DirectoryOrCreate"}}
            if "hostPath" in volume:
                base = str(volume["hostPath"].get("path") or "")
                if not os.path.exists(base):
                    if volume["hostPath"].get("type") != "DirectoryOrCreate":
                        raise MountError(
                            f'MountVolume.SetUp failed for volume "{m.volume}" : hostPath {base} does not exist'
                        )
                    os.makedirs(base, exist_ok=True)
            else:
                base = str(sandbox.volumes / m.volume)
            src = base
            if m.sub_path:
                target = bundle / "subpaths" / str(i)
                src = subpaths.bind_sub_path(base, m.sub_path, target, m.volume, source["name"])
            out.append(ocispec.BindMount(src, m.path, read_only))
        return out

    # ------------------------------------------------------------------ exits

    def _on_exit(self, inst: _Instance) -> None:
        """runc has exited: the container's status (runc's exit code is the container's),
        StartError when its command never ran, OOMKilled when the kernel's OOM killer
        ended it (read from its cgroup before the container is deleted)."""
        loop = asyncio.get_running_loop()
        loop.remove_reader(inst.pidfd)
        os.close(inst.pidfd)
        inst.pidfd = -1
        assert inst.proc is not None and self.runc is not None
        rc = inst.proc.wait()
        code = 128 - rc if rc < 0 else rc
        started = runc.Runc.init_pid(inst.root_dir) is not None
        if not started and code != 0:
            message = runc.Runc.start_error(inst.root_dir) or f"runc exited with {code}"
            self._ended(inst, START_ERROR, "StartError", message)
        elif runc.oom_killed(self.runc.cgroup(inst.cid)):
            self._ended(inst, OOM_EXIT, "OOMKilled", "")
        else:
            self._ended(inst, code, "", "")
        self._release(inst)

    def _release(self, inst: _Instance) -> None:
        """Delete the instance's container and bundle (its writable root goes with it)."""
        runtime = self.runc

        def release() -> None:
            if runtime is not None:
                runtime.delete(inst.cid)
            release_bundle(inst.root_dir)

        task = asyncio.get_running_loop().create_task(asyncio.to_thread(release))
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    def _ended(self, inst: _Instance, code: int, reason: str, message: str) -> None:
        inst.exit_code = code
        inst.exited.set()
        if inst.kill_handle is not None:
            inst.kill_handle.cancel()
        self._stop_probes(inst)
        c = inst.container
        if c.real and c.ends_at == math.inf and c.state == "running":
            c.program = Program(0.0, code, "")
            c.exit_reason = reason
            c.exit_message = message
            c.ends_at = asyncio.get_running_loop().time()
            c.probe_ready = False
        log.info(
            "container process ended",
            pod=f"{inst.key[0]}/{inst.key[1]}",
            container=inst.name,
            code=code,
            **({"reason": reason, "message": message} if reason else {}),
        )
        self._wake(inst.key)

    def _signal(self, inst: _Instance, sig: int) -> None:
        """A signal for the container's init, as a runtime's kill sends it: SIGKILL to it
        directly (with it the kernel ends every process of the container, and runc
        reports the exit); any other through runc, which passes it on. Before the init
        runs the command, SIGKILL goes to runc's process group."""
        if inst.proc is None or inst.exit_code is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if sig != signal.SIGKILL:
                os.kill(inst.proc.pid, sig)
            elif (init := runc.Runc.init_pid(inst.root_dir)) is not None:
                os.kill(init, sig)
            else:
                os.killpg(inst.proc.pid, sig)

    def kill(self, inst: _Instance, grace: float) -> None:
        """SIGTERM to the container's PID 1, SIGKILL after `grace` seconds."""
        if inst.terminating or inst.exit_code is not None:
            return
        inst.terminating = True
        self._signal(inst, signal.SIGTERM)
        inst.kill_handle = asyncio.get_running_loop().call_later(
            max(grace, 0.0), self._signal, inst, signal.SIGKILL
        )

    def stop_container(self, run: Any, name: str) -> None:
        """Stop one container's process at once (RestartAllContainers gives no grace
        period); the kubelet is woken when it has exited."""
        sandbox = self._sandboxes.get(run.uid)
        inst = sandbox.instances.get(name) if sandbox is not None else None
        if inst is not None:
            self.kill(inst, 0.0)

    def terminate(self, run: Any, grace: float) -> bool:
        """Pod deletion: stop every process of the pod (once); True when none is left."""
        sandbox = self._sandboxes.get(run.uid)
        if sandbox is None:
            return True
        for inst in sandbox.instances.values():
            self.kill(inst, grace)
        return all(i.exit_code is not None or i.proc is None for i in sandbox.instances.values())

    # ------------------------------------------------------------------ probes

    def _stop_probes(self, inst: _Instance) -> None:
        if inst.probe_task is not None and inst.probe_task is not asyncio.current_task():
            inst.probe_task.cancel()
        inst.probe_task = None

    def process_file(self, inst: _Instance, command: list[str], tty: bool) -> Path | None:
        """The OCI process JSON that runs `command` in the running container `inst` with its
        user, capabilities, environment and working directory (`runc exec --process`);
        None when it does not run its command (yet)."""
        if inst.spec_json is None or runc.Runc.init_pid(inst.root_dir) is None:
            return None
        if inst.exit_code is not None:
            return None
        process = {**inst.spec_json["process"], "args": command, "terminal": tty}
        process.pop("oomScoreAdj", None)
        path = inst.root_dir / f"exec-{os.urandom(6).hex()}.json"
        path.write_text(json.dumps(process))
        return path

    async def _exec_in(self, inst: _Instance, command: list[str], limit: float) -> int:
        process = self.process_file(inst, command, False)
        if process is None or self.runc is None:
            return 1
        proc = await asyncio.create_subprocess_exec(
            *self.runc.exec_command(inst.cid, process),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            await asyncio.wait_for(proc.wait(), limit)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise
        finally:
            with contextlib.suppress(OSError):
                process.unlink()
        return int(proc.returncode or 0)

    async def _probe_loop(
        self, inst: _Instance, sandbox: Sandbox, specs: list[probes.ProbeSpec]
    ) -> None:
        loop = asyncio.get_running_loop()
        states = [probes.ProbeState(s, loop.time()) for s in specs]
        session = self._session
        assert session is not None
        c = inst.container
        grace = float(sandbox_pod_grace(self.core, inst.key))
        while inst.exit_code is None and not inst.terminating:
            state = probes.next_probe(states)
            if state is None:
                return
            await asyncio.sleep(max(state.due() - loop.time(), 0.0))
            if inst.exit_code is not None or inst.terminating:
                return
            ok, message = await probes.run_probe(
                state.spec,
                inst.spec,
                sandbox.net.ip,
                session,
                lambda cmd, timeout: self._exec_in(inst, list(cmd), timeout),
            )
            if not state.record(ok, loop.time(), message):
                continue
            kind = state.spec.kind
            if kind == "readiness":
                c.probe_ready = bool(state.verdict)
            elif kind == "startup" and state.verdict:
                c.probe_started = True
                if not any(s.spec.kind == "readiness" for s in states):
                    c.probe_ready = True
            elif state.verdict is False:  # liveness or startup failed: restart the container
                log.info(
                    f"container failed its {kind} probe, will be restarted",
                    pod=f"{inst.key[0]}/{inst.key[1]}",
                    container=inst.name,
                    message=message,
                )
                probe_grace = state.spec.handler.get("terminationGracePeriodSeconds")
                self.kill(inst, float(probe_grace) if probe_grace is not None else grace)
                return
            inst.run.dirty = True
            self._wake(inst.key)

    # ------------------------------------------------------------------ streams

    def running_instance(self, pod: Mapping[str, Any], container: str) -> _Instance | None:
        """The running process of `container` in `pod` (exec, attach), None when there is none:
        the runtime knows only running containers, as `crictl ps` does."""
        sandbox = self._sandboxes.get(str((pod.get("metadata") or {}).get("uid") or ""))
        if sandbox is None or sandbox.closed:
            return None
        inst = sandbox.instances.get(container)
        if inst is None or inst.proc is None or inst.exit_code is not None:
            return None
        return inst

    def netns_of(self, pod: Mapping[str, Any]) -> str | None:
        """The name of the pod's network namespace (port-forward), None when it has none."""
        sandbox = self._sandboxes.get(str((pod.get("metadata") or {}).get("uid") or ""))
        return None if sandbox is None or sandbox.closed else sandbox.net.netns

    # ------------------------------------------------------------------ logs

    def _instance_logs(self, pod: Mapping[str, Any], container: str) -> list[Path] | None:
        sandbox = self._sandboxes.get(str((pod.get("metadata") or {}).get("uid") or ""))
        if sandbox is None:
            return None
        return containerlogs.instance_logs(sandbox.logs / container)

    def logs(self, pod: Mapping[str, Any], container: str, previous: bool = False) -> str | None:
        """The current instance's output (the one before it with `previous`; None when there
        was none); a container that has not run yet has an empty log."""
        files = self._instance_logs(pod, container) or []
        if previous:
            return files[-2].read_bytes().decode("utf-8", "replace") if len(files) > 1 else None
        return files[-1].read_bytes().decode("utf-8", "replace") if files else ""

    def forget(self, uid: str) -> None:
        """The pod object is gone: its sandbox goes with the store's DELETED event."""
        return None

    async def log_response(
        self, request: web.Request, pod: Mapping[str, Any], container: str
    ) -> web.StreamResponse | None:
        """`pods/log` of a real container (`containerlogs.py`); None when it is not real."""
        files = self._instance_logs(pod, container)
        if not files:
            return None
        sandbox = self._sandboxes.get(str(pod["metadata"].get("uid") or ""))
        inst = sandbox.instances.get(container) if sandbox is not None else None

        def ended(path: Path) -> bool:
            return inst is None or inst.log_path != path or inst.exit_code is not None

        return await containerlogs.log_response(request, files, pod, container, ended)

    # ------------------------------------------------------------------ pod and node ends

    def _on_event(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        try:
            if rkey == _PODS:
                uid = str(ev.obj["metadata"].get("uid") or "")
                if uid not in self._sandboxes:
                    return
                if ev.type == DELETED:
                    self._spawn_cleanup(uid, remove_dir=True)
                elif (ev.obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    self._spawn_cleanup(uid, remove_dir=False)
            elif rkey == _NODES and ev.type == DELETED:
                node = ev.obj["metadata"]["name"]
                for uid, s in list(self._sandboxes.items()):
                    if s.node == node:
                        self._spawn_cleanup(uid, remove_dir=False)
        except Exception:
            log.exception("process runtime event handling failed")

    def _spawn_cleanup(self, uid: str, remove_dir: bool) -> None:
        task = asyncio.get_running_loop().create_task(self._teardown(uid, remove_dir))
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    async def _teardown(self, uid: str, remove_dir: bool) -> None:
        """Kill what is left of the pod's processes and remove its network namespace; with
        `remove_dir` (the pod object is gone) its volumes and logs too."""
        sandbox = self._sandboxes.get(uid)
        if sandbox is None:
            return
        if not sandbox.closed:
            sandbox.closed = True
            for inst in sandbox.instances.values():
                self._stop_probes(inst)
                self._signal(inst, signal.SIGKILL)
            for inst in sandbox.instances.values():
                if inst.proc is not None and inst.exit_code is None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        await asyncio.to_thread(inst.proc.wait, 5)
                    if inst.pidfd >= 0:
                        self._on_exit(inst)
            if self.bridge is not None:
                await self.bridge.remove_pod(uid)
        if remove_dir:
            self._sandboxes.pop(uid, None)
            for token, _ in sandbox.tokens.values():
                self.sa_tokens.pop(token, None)
            try:  # never through a subPath bind that an instance's release has not undone
                await asyncio.to_thread(release_bundle, sandbox.directory)
            except OSError as exc:
                log.error("kept a pod's directory: a mount is left", uid=uid, error=str(exc))

    async def _sync_volumes(self) -> None:
        while True:
            await asyncio.sleep(VOLUME_SYNC)
            for sandbox in list(self._sandboxes.values()):
                if sandbox.closed:
                    continue
                pod = self.core.store.get(_PODS, sandbox.key)
                if pod is None or pod["metadata"].get("uid") != sandbox.uid:
                    continue
                try:
                    self._publish(sandbox, pod)
                except (MountError, ConfigError, OSError) as exc:
                    log.debug(
                        "volume refresh failed",
                        pod=f"{sandbox.key[0]}/{sandbox.key[1]}",
                        error=str(exc),
                    )
                except Exception:  # one bad object must not end the refresh of every pod
                    log.exception("volume refresh failed", pod=f"{sandbox.key[0]}/{sandbox.key[1]}")


def sandbox_pod_grace(core: ApiCore, key: PodKey) -> float:
    pod = core.store.get(_PODS, key) or {}
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return 30.0 if value is None else float(value)


def _identity(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """uid, gid, supplementary groups, capabilities and no_new_privs from the pod's and the
    container's securityContext (the container's wins); `runAsNonRoot` without a non-zero
    uid cannot start."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    sc = container.get("securityContext") or {}
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
    if non_root and not uid:
        raise ConfigError(
            "container has runAsNonRoot and image will run as root"
            if uid is None
            else "container's runAsUser breaks non-root policy"
        )
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or []]
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    return {
        "uid": None if uid is None else int(uid),
        "gid": int(gid) if gid is not None else (0 if uid is not None else None),
        "groups": sorted(set(groups)),
        "capabilities": security.capabilities(container),
        "no_new_privs": security.no_new_privs(container),
        "workdir": "",
    }


@functools.cache
def _host_bounding_set() -> frozenset[int]:
    """The capabilities this process may give (a privileged container gets all of them, as
    containerd gives every capability it holds)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapBnd:"):
                mask = int(line.split()[1], 16)
                return frozenset(n for n in range(64) if mask >> n & 1)
    return frozenset(range(64))


CAP_SYS_RESOURCE: Final = 24


def _settable(resources: ocispec.Resources) -> ocispec.Resources:
    """Lowering a process's OOM score below its parent's needs CAP_SYS_RESOURCE; without it
    (a simulator in a restricted container) the score stays at the simulator's own."""
    if CAP_SYS_RESOURCE in _host_bounding_set():
        return resources
    try:
        own = int(Path("/proc/self/oom_score_adj").read_text())
    except (OSError, ValueError):
        own = 0
    return dataclasses.replace(resources, oom_score_adj=max(resources.oom_score_adj, own))


def release_bundle(bundle: Path) -> None:
    """Remove an instance's bundle: first every mount under it (its subPath binds, an
    image root's overlay), so that removing the files never reaches a volume's."""
    subpaths.unmount_all(bundle)
    shutil.rmtree(bundle, ignore_errors=True)
