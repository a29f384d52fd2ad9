"""The independent baseline: POST prebuilt Job bodies with plain aiohttp, nothing else.

It shares no code with the project (no `jobset`, `kubesim` or `benchmarks` import): the
kubeconfig is read with PyYAML, TLS set up with `ssl`, and every body is sent exactly as
given - the bytes `benchmarks.rate` wrote, which are the controller's own Job bodies for
that JobSet, encoded as the controller sends them. No rate limiter, no retries,
no metrics, no parsing of answers (only the status code is checked): the least a client can
do per Job. `--parallelism` requests are in flight at once (the controller's per-JobSet
parallelism), over as many kept-alive connections.

    python benchmarks/minimal_client.py --kubeconfig K --bodies FILE --namespace NS \\
        [--parallelism 50] [--user-agent jobset-bench-minimal/0.1]

Prints `minimal ready` once connected, waits for a line on stdin (the harness starts
several at once that way), sends, and prints `minimal done <cpu seconds> <errors>`: the
process's CPU time (user + system) spent from the go line to the last answer.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml


def _cluster(kubeconfig: str) -> tuple[str, ssl.SSLContext | None, dict[str, str]]:
    cfg: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text())
    ctx_name = cfg.get("current-context")
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    server = str(cluster["server"]).rstrip("/")
    tls: ssl.SSLContext | None = None
    if server.startswith("https://"):
        tls = ssl.create_default_context()
        if "certificate-authority-data" in cluster:
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            tls.load_verify_locations(cadata=ca)
        elif "certificate-authority" in cluster:
            tls.load_verify_locations(cafile=cluster["certificate-authority"])
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if "token" in user:
        headers["Authorization"] = f"Bearer {user['token']}"
    return server, tls, headers


async def _run(args: argparse.Namespace, bodies: list[bytes]) -> int:
    server, tls, headers = _cluster(args.kubeconfig)
    headers["User-Agent"] = args.user_agent
    url = f"{server}/apis/batch/v1/namespaces/{args.namespace}/jobs"
    connector = aiohttp.TCPConnector(limit=args.parallelism, ssl=tls if tls else False)
    errors = 0
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        print("minimal ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        t0 = time.process_time()
        it = iter(bodies)

        async def worker() -> None:
            nonlocal errors
            for body in it:
                async with session.post(url, data=body) as resp:
                    await resp.read()
                    if resp.status != 201:
                        errors += 1

        await asyncio.gather(*(worker() for _ in range(min(args.parallelism, len(bodies)))))
        cpu = time.process_time() - t0
    print(f"minimal done {cpu:.6f} {errors}", flush=True)
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--bodies", required=True, help="one JSON Job body per line")
    p.add_argument("--namespace", required=True)
    p.add_argument("--parallelism", type=int, default=50)
    p.add_argument("--user-agent", default="jobset-bench-minimal/0.1 (plain aiohttp)")
    args = p.parse_args(argv)
    return asyncio.run(_run(args, Path(args.bodies).read_bytes().splitlines()))


if __name__ == "__main__":
    sys.exit(main())
