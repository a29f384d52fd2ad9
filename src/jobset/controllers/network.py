"""The headless Service giving a JobSet's pods stable DNS names.

With `network.enableDNSHostnames`, pods get `subdomain` and reach each other as
`<jobset>-<rjob>-<jobIndex>-<podIndex>.<subdomain>`; that needs a headless Service (no
cluster IP) named after the subdomain, selecting every pod of the JobSet, and publishing
not-ready addresses by default so peers resolve before all are ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobset.api import constants as c
from jobset.api.types import (
    dns_hostnames_enabled,
    headless_service_name,
    name_of,
    namespace_of,
    owner_reference,
)

__all__ = ["headless_service", "wants_headless_service"]


def wants_headless_service(js: Mapping[str, Any]) -> bool:
    return dns_hostnames_enabled(js)


def headless_service(js: Mapping[str, Any]) -> dict[str, Any]:
    """The Service object to create (owned by the JobSet, so it goes with it)."""
    network = (js.get("spec") or {}).get("network") or {}
    publish = network.get("publishNotReadyAddresses")
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": headless_service_name(js),
            "namespace": namespace_of(js),
            "ownerReferences": [owner_reference(js)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {c.JOBSET_NAME_KEY: name_of(js)},
            "publishNotReadyAddresses": True if publish is None else bool(publish),
        },
    }
