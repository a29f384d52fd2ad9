"""EndpointSlices validated as kube-apiserver's `ValidateEndpointSlice`: the cases and texts
of its rules (pure; the integration test sends them through kubectl)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.apiserver.registry.discovery.validation import validate_endpoint_slice
from kubesim.machinery.errors import Cause


def _slice(address_type: str = "IPv4", **endpoint: Any) -> dict[str, Any]:
    return {
        "addressType": address_type,
        "endpoints": [{"addresses": ["10.244.0.5"], **endpoint}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }


def _texts(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def test_a_valid_slice_has_no_errors() -> None:
    assert validate_endpoint_slice(_slice(hostname="w-0", nodeName="node-1")) == []
    fqdn = {"addressType": "FQDN", "endpoints": [{"addresses": ["db.example.com"]}]}
    assert validate_endpoint_slice(fqdn) == []


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            _slice(hostname="bad name"),
            'endpoints[0].hostname: Invalid value: "bad name": a lowercase RFC 1123 label '
            "must consist of",
            id="hostname-not-a-label",
        ),
        pytest.param(
            _slice(hostname="a.b"),
            'endpoints[0].hostname: Invalid value: "a.b": must not contain dots',
            id="hostname-with-dots",
        ),
        pytest.param(
            {"addressType": "IPv4", "endpoints": [{"addresses": ["fe80::1"]}]},
            'endpoints[0].addresses[0]: Invalid value: "fe80::1": must be a valid IPv4 address',
            id="ipv6-in-ipv4-slice",
        ),
        pytest.param(
            {"addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"]}]},
            'endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the '
            "loopback range (127.0.0.0/8, ::1/128)",
            id="loopback",
        ),
        pytest.param(
            {"addressType": "IPv6", "endpoints": [{"addresses": ["nope"]}]},
            'endpoints[0].addresses[0]: Invalid value: "nope": must be a valid IPv6 address',
            id="not-an-address",
        ),
        pytest.param(
            {"addressType": "IPv4", "endpoints": [{"addresses": []}]},
            "endpoints[0].addresses: Required value: must contain at least 1 address",
            id="no-address",
        ),
        pytest.param(
            {"addressType": "IP", "endpoints": []},
            'addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"',
            id="address-type",
        ),
        pytest.param(
            {"addressType": "FQDN", "endpoints": [{"addresses": ["single"]}]},
            'endpoints[0].addresses[0]: Invalid value: "single": should be a domain with at '
            "least two segments separated by dots",
            id="fqdn-one-label",
        ),
    ],
)
def test_invalid_slices_name_the_field_and_the_rule(obj: dict[str, Any], expected: str) -> None:
    assert any(t.startswith(expected) for t in _texts(validate_endpoint_slice(obj))), _texts(
        validate_endpoint_slice(obj)
    )


def test_address_type_is_immutable_and_ports_are_checked() -> None:
    old = _slice()
    new = {**_slice("IPv6"), "endpoints": [{"addresses": ["fd00::5"]}]}
    assert 'addressType: Invalid value: "IPv6": field is immutable' in _texts(
        validate_endpoint_slice(new, old)
    )
    ports = {**_slice(), "ports": [{"name": "x", "protocol": "TCP"}, {"name": "x"}]}
    assert _texts(validate_endpoint_slice(ports)) == [
        'ports[1].name: Duplicate value: "x"',
        "ports[1].protocol: Required value",
    ]


def test_too_many_endpoints_is_one_error() -> None:
    many = {"addressType": "IPv4", "endpoints": [{"addresses": ["bad"]}] * 1001}
    assert _texts(validate_endpoint_slice(many)) == [
        "endpoints: Too many: 1001: must have at most 1000 items"
    ]
