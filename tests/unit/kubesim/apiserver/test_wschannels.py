"""The WebSocket channel protocols (`kubesim.apiserver.http.wschannels`): which one a client
gets, and the framing of each, hostile messages included."""

from __future__ import annotations

import pytest

from kubesim.apiserver.http import wschannels as w


@pytest.mark.parametrize(
    ("offered", "supported", "chosen"),
    [
        (["v5.channel.k8s.io", "v4.channel.k8s.io"], w.EXEC_PROTOCOLS, "v5.channel.k8s.io"),
        (["v4.channel.k8s.io"], w.EXEC_PROTOCOLS, "v4.channel.k8s.io"),
        (["x", "base64.channel.k8s.io"], w.EXEC_PROTOCOLS, "base64.channel.k8s.io"),
        ([], w.EXEC_PROTOCOLS, ""),
        (["x"], w.EXEC_PROTOCOLS, None),
        # The kubelet's port-forward has no v5: the client's second choice.
        (["v5.channel.k8s.io", "v4.channel.k8s.io"], w.PORTFORWARD_PROTOCOLS, "v4.channel.k8s.io"),
        (["v5.channel.k8s.io"], w.PORTFORWARD_PROTOCOLS, None),
    ],
    ids=[
        "exec-v5-first",
        "exec-v4",
        "exec-skips-unknown",
        "exec-none-named",
        "exec-unknown-only",
        "portforward-falls-back-to-v4",
        "portforward-v5-only",
    ],
)
def test_the_first_offered_supported_protocol_is_chosen(
    offered: list[str], supported: tuple[str, ...], chosen: str | None
) -> None:
    assert w.choose(offered, supported) == chosen


def test_binary_protocols_frame_with_the_channel_byte() -> None:
    for protocol in ("v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io", ""):
        c = w.codec(protocol)
        assert c.encode(1, b"out") == b"\x01out"
        assert c.decode(b"\x00in") == (0, b"in")
        assert c.decode(b"") is None


def test_base64_protocols_frame_as_text() -> None:
    c = w.codec("v4.base64.channel.k8s.io")
    assert c.encode(2, b"\xff\x00") == "2/wA="
    assert c.decode(b"0aGk=") == (0, b"hi")
    assert c.decode(b"0not base64!") is None
    assert c.decode(b"0") == (0, b"")


def test_only_v5_closes_a_channel_and_only_v4_and_v5_write_json() -> None:
    assert w.codec("v5.channel.k8s.io").decode(b"\xff\x00") == (w.CLOSE, b"\x00")
    assert w.codec("v5.channel.k8s.io").stream_close
    assert not w.codec("v4.channel.k8s.io").stream_close
    json_status = {p: w.codec(p).json_status for p in w.EXEC_PROTOCOLS}
    assert json_status == {
        "v5.channel.k8s.io": True,
        "v4.channel.k8s.io": True,
        "v4.base64.channel.k8s.io": True,
        "channel.k8s.io": False,
        "base64.channel.k8s.io": False,
        "": False,
    }
