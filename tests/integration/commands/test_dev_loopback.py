"""`jobset dev` listens on loopback only (docs/reliability.md, "Threat model"): its metrics
and health servers bind 127.0.0.1, like its simulated API server and webhooks, so nobody
else on the developer's network can scrape or probe them."""

from __future__ import annotations

from pathlib import Path

from kubesim.process import free_port, start_command


def listening(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} shows them) listening on `port`."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hexport = fields[1].rsplit(":", 1)
            if int(hexport, 16) == port and fields[3] == "0A":  # TCP_LISTEN
                out.add(address)
    return out


def test_dev_serves_metrics_and_health_on_loopback_only(tmp_path: Path) -> None:
    metrics, health = free_port(), free_port()
    dev = start_command(
        tmp_path,
        "dev",
        "--sim-level",
        "none",
        "--nodes",
        "1",
        "--metrics-port",
        str(metrics),
        "--health-port",
        str(health),
    )
    try:
        for port in (metrics, health):
            assert listening(port) == {"0100007F"}, (port, listening(port))  # 127.0.0.1
    finally:
        dev.stop()
