"""The JobSet resource as the runtime client addresses it, defined once for the controller,
the webhooks, the placement code and the SDK. The core kinds (Jobs, Pods, Services, PVCs,
Nodes, ...) are the constant block of `jobset.runtime.client`."""

from __future__ import annotations

from typing import Final

from jobset.api import constants as c
from jobset.runtime.client import Resource

__all__ = ["JOBSETS"]

JOBSETS: Final = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)
