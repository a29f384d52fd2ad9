"""free_port: the ports tests hand to child servers stay clear of the kernel's choices."""

from __future__ import annotations

import random
import socket

import pytest

from kubesim.process import ephemeral_range, free_port


def test_free_ports_lie_below_the_ephemeral_range_and_never_repeat() -> None:
    # A CI run lost a module because the kernel gave a port free_port had just released
    # (from bind(0)) to the child's own bind(0) before the child bound it.
    low, _ = ephemeral_range()
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(1024 <= port < low for port in ports), ports


def test_a_port_in_use_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    low, _ = ephemeral_range()
    with socket.socket() as other:
        for busy in range(low - 1, low - 1000, -1):
            try:
                other.bind(("127.0.0.1", busy))
                break
            except OSError:
                continue
        other.listen()
        draws = iter([busy, busy - 1000, busy - 1001, busy - 1002])
        monkeypatch.setattr(random, "randrange", lambda start, stop: next(draws))
        port = free_port()
    assert port != busy and port in (busy - 1000, busy - 1001, busy - 1002)
