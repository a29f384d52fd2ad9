"""`imagePullPolicy` for images of a repository the user loaded, as the kubelet pulls on kind.

Which containers this decides for, so that no simulated program sees a change: only those
whose image's repository has some image loaded (`--load-image`, `jobset sim load-image`)
and that no `--run-image` mapping claims. Every other image stays what it was: the image of
a simulated program, always "already present on machine". For the ones decided here the
simulator has no registry: a reference that is loaded is present (and a pull of it, under
`Always`, succeeds from the store), any other is not, and pulling it fails as a registry
answers an unknown tag. So, as the kubelet's `EnsureImageExists`:

- present and not `Always`: started at once (`Pulled` "already present on machine");
- `Never` and not present: `ErrImageNeverPull`, `Container image "X" is not present with pull
  policy of Never`;
- otherwise a pull: `Pulling`, then for a reference that is not loaded `Failed` "Failed to pull
  image ...", the container waiting in `ErrImagePull`, then `ImagePullBackOff` ("Back-off
  pulling image") for the kubelet's back-off (10 s doubling to 300 s, times `--time-scale`)
  before the next attempt.

Pure apart from the back-off it keeps per pod and image.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from kubesim.images.reference import InvalidReference, normalize

__all__ = ["ImagePuller", "PullOutcome"]

BACKOFF: Final = 10.0  # the kubelet's image pull back-off, doubling ...
MAX_BACKOFF: Final = 300.0  # ... up to five minutes
RESYNC: Final = 1.0  # seconds until the pod's next sync shows the back-off (before --time-scale)
NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class Images(Protocol):
    def lookup(self, reference: str) -> Any: ...

    def has_repository(self, reference: str) -> bool: ...


@dataclass(frozen=True)
class PullOutcome:
    """A container that cannot start for its image: the kubelet's waiting reason and
    message, its events (type, reason, message) and when to try again."""

    reason: str
    message: str
    events: tuple[tuple[str, str, str], ...]
    retry_at: float


@dataclass
class _Backoff:
    failures: int = 0
    until: float = 0.0


def _policy(container: dict[str, Any]) -> str:
    image = str(container.get("image") or "")
    policy = str(container.get("imagePullPolicy") or "")
    if policy:
        return policy
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return "Always" if ":" not in last or last.endswith(":latest") else "IfNotPresent"


def _not_found(ref: str) -> str:
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
        f'failed to resolve reference "{ref}": {ref}: not found'
    )


@dataclass
class ImagePuller:
    """The kubelet's image manager for loaded repositories (see the module docstring)."""

    images: Images
    time_scale: float = 1.0
    # containers whose image no pull concerns (those a `--run-image` mapping claims)
    exempt: Callable[[dict[str, Any]], bool] = lambda container: False
    _backoff: dict[tuple[str, str], _Backoff] = field(default_factory=dict)

    def decides(self, container: dict[str, Any]) -> bool:
        image = str(container.get("image") or "")
        return self.images.has_repository(image) and not self.exempt(container)

    def ensure(self, pod_uid: str, container: dict[str, Any], now: float) -> PullOutcome | None:
        """None when the image is there (the kubelet starts the container and says so as it
        always has); otherwise why it waits."""
        image = str(container.get("image") or "")
        present = self.images.lookup(image) is not None
        policy = _policy(container)
        if present and policy != "Always":
            return None
        if policy == "Never":
            msg = f'Container image "{image}" is not present with pull policy of Never'
            events: tuple[tuple[str, str, str], ...] = (
                (WARNING, "ErrImageNeverPull", msg),
                (WARNING, "Failed", "Error: ErrImageNeverPull"),
            )
            return PullOutcome("ErrImageNeverPull", msg, events, now + RESYNC * self.time_scale)
        if present:
            return None  # pulled from the store: the kubelet's Pulling / Pulled events follow
        key = (pod_uid, image)
        backoff = self._backoff.setdefault(key, _Backoff())
        if now < backoff.until:
            msg = f'Back-off pulling image "{image}"'
            events = ((NORMAL, "BackOff", msg), (WARNING, "Failed", "Error: ImagePullBackOff"))
            return PullOutcome("ImagePullBackOff", msg, events, backoff.until)
        try:
            error = _not_found(normalize(image))
        except InvalidReference as exc:
            error = (
                f'rpc error: code = Unknown desc = failed to pull and unpack image "{image}": {exc}'
            )
        wait = min(BACKOFF * 2.0 ** min(backoff.failures, 32), MAX_BACKOFF) * self.time_scale
        backoff.failures += 1
        backoff.until = now + wait
        events = (
            (NORMAL, "Pulling", f'Pulling image "{image}"'),
            (WARNING, "Failed", f'Failed to pull image "{image}": {error}'),
            (WARNING, "Failed", "Error: ErrImagePull"),
        )
        return PullOutcome("ErrImagePull", error, events, now + min(RESYNC * self.time_scale, wait))

    def forget(self, pod_uid: str) -> None:
        for key in [k for k in self._backoff if k[0] == pod_uid]:
            del self._backoff[key]
