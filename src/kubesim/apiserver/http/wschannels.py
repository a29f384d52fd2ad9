"""The channel protocols of the streaming subresources over WebSocket, pure: which one a
client gets, and how a channel's bytes become a message and back.

As the kubelet's `wsstream` speaks them:

- `channel.k8s.io` (also what a client that names no protocol gets) and `v4.channel.k8s.io`:
  binary messages, the first byte the channel. A text message is read the same way (the
  Python clients send stdin as text).
- `base64.channel.k8s.io` and `v4.base64.channel.k8s.io`: text messages, the channel as an
  ASCII digit, the data base64-encoded.
- `v5.channel.k8s.io`: as v4, plus `[255, channel]`, which closes that channel (stdin at its
  end of file).

The error channel of exec and attach carries the `Status` as JSON under v4 and v5; the older
protocols write only a failure, as its message text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BASE64_CHANNEL",
    "CHANNEL",
    "CLOSE",
    "EXEC_PROTOCOLS",
    "PORTFORWARD_PROTOCOLS",
    "PORTFORWARD_TUNNEL",
    "V4",
    "V4_BASE64",
    "V5",
    "Codec",
    "choose",
    "codec",
]

CHANNEL: Final = "channel.k8s.io"
BASE64_CHANNEL: Final = "base64.channel.k8s.io"
V4: Final = "v4.channel.k8s.io"
V4_BASE64: Final = "v4.base64.channel.k8s.io"
V5: Final = "v5.channel.k8s.io"
# kubectl's port-forward over WebSocket: a SPDY session tunnelled in binary messages, which
# kube-apiserver serves itself rather than passing the upgrade on to the kubelet.
PORTFORWARD_TUNNEL: Final = "SPDY/3.1+portforward.k8s.io"
CLOSE: Final = 255

# The kubelet's lists ("" is a client that names no protocol).
EXEC_PROTOCOLS: Final = (V5, V4, V4_BASE64, CHANNEL, BASE64_CHANNEL, "")
PORTFORWARD_PROTOCOLS: Final = (V4, V4_BASE64, "")


@dataclass(frozen=True)
class Codec:
    protocol: str

    @property
    def base64(self) -> bool:
        return "base64" in self.protocol

    @property
    def json_status(self) -> bool:
        """v4 and v5 write the whole Status; older protocols a failure's message only."""
        return self.protocol in (V4, V4_BASE64, V5)

    @property
    def stream_close(self) -> bool:
        return self.protocol == V5

    def encode(self, channel: int, data: bytes) -> bytes | str:
        """The message that carries `data` on `channel` (str: a text message)."""
        if self.base64:
            return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
        return bytes([channel]) + data

    def decode(self, message: bytes) -> tuple[int, bytes] | None:
        """The channel and data of a client's message; None for one that carries nothing
        (empty, or not base64 where base64 is spoken)."""
        if not message:
            return None
        channel, data = message[0], message[1:]
        if self.stream_close and channel == CLOSE:
            return channel, data
        if not self.base64:
            return channel, data
        try:
            return channel - ord("0"), base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None


def codec(protocol: str) -> Codec:
    return Codec(protocol)


def choose(offered: Sequence[str], supported: Sequence[str]) -> str | None:
    """The first protocol the client offers that is supported, as `wsstream` picks it;
    None when there is none. A client that offers none gets ""."""
    for protocol in offered or [""]:
        if protocol in supported:
            return protocol
    return None
