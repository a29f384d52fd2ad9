"""`kubectl exec`, `attach` and `port-forward` for real containers: the kubelet's side.

- exec is `runc exec` of a process JSON (the container's user, capabilities, environment and
  working directory with the command), with the command's standard streams on pipes, or with
  `tty` on a pseudo-terminal runc makes in the container: its master end comes back over a
  console socket, and the client's resize messages set its size (TIOCSWINSZ);
- attach streams what the container writes from now on (its log), until it exits;
- port-forward connects, from inside the pod's network namespace, to the port on localhost, as
  the kubelet's runtime does, so a server bound to 127.0.0.1 in the pod is reachable: a
  short-lived thread enters the namespace and makes the socket, which the event loop then uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import termios
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kubesim.apiserver.http.podstreams import ExecProcess, StreamError
from kubesim.kubelet import network
from kubesim.kubelet.processes import DEFAULT_PATH

if TYPE_CHECKING:
    from kubesim.kubelet.processes import ProcessRuntime

__all__ = ["RuntimeStreams"]

READ_SIZE: Final = 32 * 1024
ATTACH_POLL: Final = 0.1
START_WAIT: Final = 10.0  # seconds a container that is starting may take to run its command
START_POLL: Final = 0.02
CLONE_NEWNET: Final = 0x40000000


def _exit_code(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class _PipeProcess:
    """A command whose stdin, stdout and stderr are pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def read_stdout(self) -> bytes:
        assert self.proc.stdout is not None
        return await self.proc.stdout.read(READ_SIZE)

    async def read_stderr(self) -> bytes:
        assert self.proc.stderr is not None
        return await self.proc.stderr.read(READ_SIZE)

    async def write_stdin(self, data: bytes) -> None:
        if self.proc.stdin is None or self.proc.stdin.is_closing():
            return
        self.proc.stdin.write(data)
        with contextlib.suppress(ConnectionError):
            await self.proc.stdin.drain()

    def close_stdin(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()

    def resize(self, width: int, height: int) -> None:
        return None

    async def wait(self) -> int:
        return _exit_code(await self.proc.wait())

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class _PtyProcess:
    """A command on a pseudo-terminal: its output is one stream, as with a real TTY."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self.proc = proc
        self.master = master
        self.eof = False

    async def read_stdout(self) -> bytes:
        loop = asyncio.get_running_loop()
        while not self.eof:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self.master, _settle, ready, None)
            try:
                await ready
            finally:
                loop.remove_reader(self.master)
            try:
                data = os.read(self.master, READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:  # EIO: every holder of the terminal's other end has gone
                data = b""
            if data:
                return data
            self.eof = True
            os.close(self.master)
        return b""

    async def read_stderr(self) -> bytes:
        return b""

    async def write_stdin(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.eof:
            try:
                view = view[os.write(self.master, view) :]
            except BlockingIOError:
                await asyncio.sleep(0.01)
            except OSError:
                return

    def close_stdin(self) -> None:
        # A terminal has no end of file of its own: ^D at the start of a line is one.
        with contextlib.suppress(OSError):
            if not self.eof:
                os.write(self.master, b"\x04")

    def resize(self, width: int, height: int) -> None:
        with contextlib.suppress(OSError):
            if not self.eof:
                fcntl.ioctl(
                    self.master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0)
                )

    async def wait(self) -> int:
        return _exit_code(await self.proc.wait())

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class _AttachProcess:
    """What the container writes from the moment of attaching, until it exits."""

    def __init__(self, path: Path, ended: asyncio.Event) -> None:
        self.file = path.open("rb")
        self.file.seek(0, os.SEEK_END)
        self.ended = ended

    async def read_stdout(self) -> bytes:
        while not self.file.closed:
            data = self.file.read(READ_SIZE)
            if data:
                return data
            if self.ended.is_set():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ended.wait(), ATTACH_POLL)
        self.file.close()
        return b""

    async def read_stderr(self) -> bytes:
        return b""  # the container's log holds both streams: they come on stdout

    async def write_stdin(self, data: bytes) -> None:
        return None  # containers run without stdin (`stdin: true` is not simulated)

    def close_stdin(self) -> None:
        return None

    def resize(self, width: int, height: int) -> None:
        return None

    async def wait(self) -> int:
        return 0

    def kill(self) -> None:
        self.file.close()


async def _receive_terminal(
    listener: socket.socket, proc: asyncio.subprocess.Process
) -> int | None:
    """The terminal's master end, which runc sends over its console socket; None when the
    exec ended without one."""
    loop = asyncio.get_running_loop()
    listener.setblocking(False)
    accept = asyncio.ensure_future(loop.sock_accept(listener))
    ended = asyncio.ensure_future(proc.wait())
    try:
        await asyncio.wait({accept, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not accept.done():
            return None
        conn, _ = accept.result()
        with conn:
            conn.setblocking(True)
            _, fds, _, _ = await asyncio.to_thread(socket.recv_fds, conn, 4096, 1)
        return fds[0] if fds else None
    finally:
        accept.cancel()
        ended.cancel()
        path = listener.getsockname()
        listener.close()
        with contextlib.suppress(OSError, TypeError):
            os.unlink(path)


def _connect_in_netns(netns: Path, port: int) -> socket.socket:
    """A socket connected to localhost:`port` in the network namespace `netns`; runs on a
    thread of its own, which the namespace change confines and which then ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {netns}")
    finally:
        os.close(fd)
    errors = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.connect((host, port))
        except OSError as exc:
            sock.close()
            errors.append(f"{host}: {exc.strerror or exc}")
            continue
        sock.setblocking(False)
        return sock
    raise OSError(f"failed to connect to localhost:{port} inside the pod: {'; '.join(errors)}")


async def _in_thread(netns: Path, port: int) -> socket.socket:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[socket.socket] = loop.create_future()

    def run() -> None:
        try:
            sock = _connect_in_netns(netns, port)
        except OSError as exc:
            loop.call_soon_threadsafe(_fail, done, exc)
            return
        loop.call_soon_threadsafe(_settle, done, sock)

    threading.Thread(target=run, name="port-forward-dial", daemon=True).start()
    return await done


class RuntimeStreams:
    """The `PodStreams` backend of the process runtime."""

    def __init__(self, runtime: ProcessRuntime) -> None:
        self.runtime = runtime

    def has_container(self, pod: Mapping[str, Any], container: str) -> bool:
        return self.runtime.running_instance(pod, container) is not None

    def _instance(self, pod: Mapping[str, Any], container: str) -> Any:
        inst = self.runtime.running_instance(pod, container)
        if inst is None:
            raise StreamError(f'container not found ("{container}")')
        return inst

    async def _process_file(
        self, pod: Mapping[str, Any], container: str, command: list[str], tty: bool
    ) -> tuple[Any, Path]:
        """The process JSON for `runc exec`; the pod can be Running a moment before runc has
        started the container's command (a runtime's StartContainer returns only then), so
        that moment is waited out."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_WAIT
        while True:
            inst = self._instance(pod, container)
            path = self.runtime.process_file(inst, command, tty)
            if path is not None:
                return inst, path
            if loop.time() >= deadline:
                raise StreamError(f'container not found ("{container}")')
            await asyncio.sleep(START_POLL)

    async def exec(
        self, pod: Mapping[str, Any], container: str, command: list[str], stdin: bool, tty: bool
    ) -> ExecProcess:
        inst, process = await self._process_file(pod, container, command, tty)
        runtime = self.runtime.runc
        if runtime is None:
            raise StreamError("the container runtime is stopped")
        listener = None
        if tty:
            # In the simulator's state directory: a Unix socket's path has at most 107 bytes.
            socket_path = str(runtime.root.parent / f"console-{os.urandom(6).hex()}.sock")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(socket_path)
            listener.listen(1)
        argv = runtime.exec_command(inst.cid, process, socket_path if tty else None)
        pipe = asyncio.subprocess.PIPE
        devnull = asyncio.subprocess.DEVNULL
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=devnull if tty or not stdin else pipe,
                stdout=devnull if tty else pipe,
                stderr=devnull if tty else pipe,
                start_new_session=True,
                env={"PATH": DEFAULT_PATH},
            )
        except OSError as exc:
            if listener is not None:
                listener.close()
            raise StreamError(f"failed to exec in container: {exc}") from None
        if listener is None:
            return _PipeProcess(proc)
        master = await _receive_terminal(listener, proc)
        if master is None:
            code = _exit_code(await proc.wait())
            raise StreamError(f"failed to start the terminal in the container (exit {code})")
        os.set_blocking(master, False)
        return _PtyProcess(proc, master)

    async def attach(self, pod: Mapping[str, Any], container: str) -> ExecProcess:
        inst = self._instance(pod, container)
        return _AttachProcess(inst.log_path, inst.exited)

    async def dial(
        self, pod: Mapping[str, Any], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        netns = self.runtime.netns_of(pod)
        if netns is None:
            raise StreamError(f"pod {pod['metadata']['name']} has no network namespace")
        sock = await _in_thread(network.NETNS_DIR / netns, port)
        return await asyncio.open_connection(sock=sock)
