"""The real-pod network's address plan: one /22 per simulator, disjoint, inside 10.244/16.

A 32 x 8 JobSet of real pods (the recovery benchmark's) needs 256 addresses on one
bridge, which the former /24 per bridge (253 addresses) could not give.
"""

from __future__ import annotations

import ipaddress

from kubesim.kubelet.network import MAX_BRIDGES, POD_SLOTS, SUPERNET, Bridge


def test_bridges_are_disjoint_22s_inside_the_supernet() -> None:
    networks = [Bridge(i, None).network for i in range(MAX_BRIDGES)]  # type: ignore[arg-type]
    assert MAX_BRIDGES == 64
    assert all(net.prefixlen == 22 and net.subnet_of(SUPERNET) for net in networks)
    assert len({net.network_address for net in networks}) == MAX_BRIDGES
    assert networks[1].network_address == ipaddress.IPv4Address("10.244.4.0")
    assert networks[-1].broadcast_address == SUPERNET.broadcast_address


def test_pod_slots_leave_out_network_gateway_and_broadcast() -> None:
    bridge = Bridge(5, None)  # type: ignore[arg-type]
    net = bridge.network
    addresses = {net.network_address + k for k in POD_SLOTS}
    assert len(addresses) == 1021 >= 32 * 8
    assert net.network_address not in addresses
    assert ipaddress.IPv4Address(bridge.gateway) not in addresses
    assert net.broadcast_address not in addresses
    assert all(address in net for address in addresses)
