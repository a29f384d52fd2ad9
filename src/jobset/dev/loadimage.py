"""`jobset sim load-image ARCHIVE... [--kubeconfig PATH] [--context NAME]`.

Loads image archives into a running `jobset sim` or `jobset dev`, as `kind load
image-archive` loads them into a kind node: each archive is streamed to the simulator's
`POST /sim/images` (`kubesim.images.endpoint`) with the kubeconfig's credentials, which must
be the admin's. Prints one line per image loaded; exits 1 with the server's message when an
archive is refused, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["LOAD_PATH", "main"]

LOAD_PATH: Final = "/sim/images"  # kubesim.images.endpoint.LOAD_PATH (no import of kubesim here)
CHUNK: Final = 1024 * 1024
TIMEOUT: Final = 3600.0  # seconds one archive may take to send and unpack


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jobset sim load-image",
        description="Load docker-archive or oci-archive tars into a running jobset sim / "
        "jobset dev, under the names they carry (as kind load image-archive). The cluster "
        "must have been started with --load-image or --run-image.",
    )
    p.add_argument("archives", nargs="+", metavar="ARCHIVE", help="an image archive (tar)")
    p.add_argument("--kubeconfig", default=None, help="the cluster's kubeconfig ($KUBECONFIG)")
    p.add_argument("--context", default=None, help="the kubeconfig context to use")
    return p


async def _endpoint(kubeconfig: str | None, context: str | None) -> tuple[str, Any, dict[str, str]]:
    """The server URL, its TLS context and the authorization header, from the kubeconfig."""
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config

    cfg = k8s_client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    await k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
    headers = {}
    token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
    if token:
        headers["Authorization"] = token if token.startswith("Bearer ") else f"Bearer {token}"
    tls: Any = None
    if str(cfg.host).startswith("https"):
        tls = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            tls.load_cert_chain(cfg.cert_file, cfg.key_file)
    return str(cfg.host).rstrip("/"), tls, headers


async def _chunks(path: str) -> AsyncIterator[bytes]:
    """The archive's bytes, read off the event loop, a chunk at a time."""
    f = await asyncio.to_thread(open, path, "rb")
    try:
        while chunk := await asyncio.to_thread(f.read, CHUNK):
            yield chunk
    finally:
        f.close()


async def _load(args: argparse.Namespace) -> int:
    import aiohttp

    url, tls, headers = await _endpoint(args.kubeconfig, args.context)
    headers["Content-Type"] = "application/x-tar"
    timeout = aiohttp.ClientTimeout(total=TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
        for archive in args.archives:
            async with session.post(
                url + LOAD_PATH, data=_chunks(archive), headers=headers, ssl=tls
            ) as resp:
                answer = await resp.json(content_type=None)
            if resp.status != 200:
                message = answer.get("message") if isinstance(answer, dict) else None
                print(
                    f"jobset sim load-image: {archive}: {message or resp.status}", file=sys.stderr
                )
                return 1
            for image in answer.get("images") or []:
                print(f"loaded {image['name']} ({image['digest']}) from {archive}", flush=True)
    return 0


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    for archive in args.archives:
        if not Path(archive).is_file():
            print(f"jobset sim load-image: {archive}: no such file", file=sys.stderr)
            return 2
    try:
        return asyncio.run(_load(args))
    except (OSError, ValueError) as exc:
        print(f"jobset sim load-image: {exc}", file=sys.stderr)
        return 1
