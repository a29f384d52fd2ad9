"""Serve a certificate from files that something else renews (cert-manager, a mounted Secret).

controller-runtime's `certwatcher` reloads `tls.crt`/`tls.key` when they change so a renewed
certificate is served without a restart; this polls the two files every `interval` seconds
and hands changed contents to a `kubeutil.tls.ServingCert`, which swaps the certificate for
new handshakes. Polling rather than inotify: a Secret volume is updated by replacing a
symlink, which is easy to miss with file watches and costs nothing to poll.

The webhook server (`--cert-management=files`) and the secure metrics server
(`--metrics-cert-dir`) both use it. With `metrics`, every load counts in controller-runtime's
`certwatcher_read_certificate_total` and every failed one in
`certwatcher_read_certificate_errors_total`.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

from jobset.runtime.logging import get_logger
from kubeutil.aio import cancel_and_wait
from kubeutil.tls import ServingCert

if TYPE_CHECKING:
    from jobset.runtime.metrics import RuntimeMetrics

__all__ = ["CertFiles"]


class CertFiles:
    """`cert_name`/`key_name` in `directory`, kept loaded into `serving`."""

    def __init__(
        self,
        directory: Path,
        serving: ServingCert,
        interval: float = 10.0,
        *,
        cert_name: str = "tls.crt",
        key_name: str = "tls.key",
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        self.directory = directory
        self.metrics = metrics
        self.serving = serving
        self.interval = interval
        self.cert_file = directory / cert_name
        self.key_file = directory / key_name
        self._task: asyncio.Task[None] | None = None

    def load(self) -> None:
        """Load the files now (OSError, ValueError or ssl.SSLError when they are unusable)."""
        if self.metrics is not None:
            self.metrics.certwatcher_read_certificate_total.inc()
        try:
            self.serving.update(self.cert_file.read_bytes(), self.key_file.read_bytes())
        except (OSError, ValueError, ssl.SSLError):
            if self.metrics is not None:
                self.metrics.certwatcher_read_certificate_errors_total.inc()
            raise

    async def start(self, wait: float | None = 0.0) -> None:
        """Load the files, then keep reloading them in the background.

        `wait` bounds how long to wait for loadable files (None: as long as it takes; 0: one
        attempt). cert-manager issues the certificate after the install created the pods, so
        the Secret volume (mounted optional) may fill only after the process started: the
        server must neither start without its certificate nor give up on it for good. When
        the wait runs out, the last attempt's error propagates."""
        loop = asyncio.get_running_loop()
        deadline = None if wait is None else loop.time() + wait
        log = get_logger("cert-files", dir=str(self.directory))
        waiting = False
        while True:
            try:
                self.load()
                break
            except (OSError, ValueError, ssl.SSLError) as exc:
                if deadline is not None and loop.time() >= deadline:
                    raise
                if not waiting:
                    log.info("waiting for the certificate files", error=repr(exc))
                    waiting = True
            await asyncio.sleep(min(self.interval, 1.0))
        if waiting:
            log.info("certificate files loaded")
        self._task = asyncio.create_task(self._watch(), name=f"cert files {self.directory}")

    async def _watch(self) -> None:
        log = get_logger("cert-files", dir=str(self.directory))
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.load()
            except (OSError, ValueError, ssl.SSLError) as exc:  # half-written files: next round
                log.warning("cannot reload certificate files", error=repr(exc))

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
