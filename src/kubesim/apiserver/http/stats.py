"""What was asked of the server: resource requests by verb and resource, and by client,
served read-only at /debug/requests for benchmarks."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from kubesim.apiserver.http.target import Target

__all__ = ["RequestStats"]


class RequestStats:
    """Counts of resource requests, and when each client's arrived."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str], int] = {}
        # Per client (the user agent's product: "kubectl", "jobset-controller", ...), verb and
        # resource[/subresource].
        self.requests_by_agent: dict[tuple[str, str, str], int] = {}
        # For the same keys: [first arrival, last arrival (time.monotonic(), the host's
        # CLOCK_MONOTONIC that other processes read too), request body bytes]. Benchmarks
        # time a client's request rate from the server's record rather than by polling.
        self.request_spans: dict[tuple[str, str, str], list[float]] = {}

    def count(self, request: web.Request, t: Target, verb: str) -> None:
        """Count the request by verb and resource, and by client (for /debug/requests)."""
        self.requests[(verb, t.rt.plural)] = self.requests.get((verb, t.rt.plural), 0) + 1
        agent = (request.headers.get("User-Agent") or "").split("/", 1)[0].strip()
        akey = (agent, verb, f"{t.rt.plural}/{t.subresource}" if t.subresource else t.rt.plural)
        self.requests_by_agent[akey] = self.requests_by_agent.get(akey, 0) + 1
        now = time.monotonic()
        size = request.content_length or 0
        span = self.request_spans.get(akey)
        if span is None:
            self.request_spans[akey] = [now, now, float(size)]
        else:
            span[1] = now
            span[2] += size

    def report(self) -> dict[str, Any]:
        """Resource requests served so far, by verb and resource, and also by client."""
        return {
            "requests": [
                {"verb": verb, "resource": res, "count": n}
                for (verb, res), n in sorted(self.requests.items())
            ],
            "byUserAgent": [
                {
                    "userAgent": agent,
                    "verb": verb,
                    "resource": res,
                    "count": n,
                    **_span(self.request_spans.get((agent, verb, res))),
                }
                for (agent, verb, res), n in sorted(self.requests_by_agent.items())
            ],
        }


def _span(span: list[float] | None) -> dict[str, float | int]:
    """first/last arrival (monotonic seconds) and body bytes of one /debug/requests row."""
    if span is None:
        return {}
    return {"first": span[0], "last": span[1], "bytes": int(span[2])}
