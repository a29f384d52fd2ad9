"""Bulk create / paged list / concurrent watch against a running simulated cluster.

Shared by the scale test (small N) and `benchmarks/sim_scale.py` (100,000 objects), so
both exercise exactly the same client behaviour: kubernetes_asyncio over HTTPS, as the
controller itself talks to the API server.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client, config, watch


@dataclass
class LoadResult:
    created: int = 0
    create_seconds: float = 0.0
    listed: int = 0
    pages: int = 0
    list_seconds: float = 0.0
    watched: list[int] = field(default_factory=list)
    watch_seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


async def api_client(kubeconfig: str, pool: int = 64) -> client.ApiClient:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = pool
    return client.ApiClient(cfg)


async def run_load(
    kubeconfig: str,
    namespace: str,
    count: int,
    watchers: int = 3,
    concurrency: int = 32,
    page_size: int = 500,
    watch_timeout: float = 600.0,
) -> LoadResult:
    """Create `count` ConfigMaps while `watchers` clients watch, then list them in pages."""
    result = LoadResult()
    api = await api_client(kubeconfig, pool=concurrency + watchers + 4)
    try:
        core = client.CoreV1Api(api)
        await core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace))
        )
        start_rv = (
            await core.list_namespaced_config_map(namespace, limit=1)
        ).metadata.resource_version

        async def watch_all() -> int:
            seen = 0
            w = watch.Watch()
            async with w.stream(
                core.list_namespaced_config_map,
                namespace,
                resource_version=start_rv,
                timeout_seconds=int(watch_timeout),
                _request_timeout=watch_timeout + 30,
            ) as stream:
                async for event in stream:
                    if event["type"] == "ADDED":
                        seen += 1
                        if seen >= count:
                            w.stop()
            return seen

        watch_tasks = [asyncio.create_task(watch_all()) for _ in range(watchers)]
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(count):
            queue.put_nowait(i)

        async def creator() -> None:
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                body = client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name=f"cm-{i:07d}", labels={"shard": str(i % 16)}),
                    data={"index": str(i)},
                )
                try:
                    await core.create_namespaced_config_map(namespace, body)
                    result.created += 1
                except client.ApiException as exc:
                    result.errors.append(f"create cm-{i}: {exc.status} {exc.reason}")

        t0 = time.perf_counter()
        await asyncio.gather(*(creator() for _ in range(concurrency)))
        result.create_seconds = time.perf_counter() - t0

        t0 = time.perf_counter()
        await _list_in_pages(core, namespace, page_size, result)
        result.list_seconds = time.perf_counter() - t0

        t0 = time.perf_counter()
        result.watched = list(await asyncio.wait_for(asyncio.gather(*watch_tasks), watch_timeout))
        result.watch_seconds = time.perf_counter() - t0
    finally:
        await api.close()
    return result


async def _list_in_pages(
    core: client.CoreV1Api, namespace: str, page_size: int, result: LoadResult
) -> None:
    """List the namespace's ConfigMaps in pages of `page_size`, counting pages and items."""
    token = ""
    while True:
        more: dict[str, Any] = {"_continue": token} if token else {}
        page = await core.list_namespaced_config_map(namespace, limit=page_size, **more)
        result.pages += 1
        result.listed += len(page.items)
        token = page.metadata._continue or ""
        if not token:
            return
