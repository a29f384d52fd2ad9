"""`--cluster-domain` and `--dns-address`: what is accepted, and the error for what is not."""

from __future__ import annotations

import pytest

from kubesim.dns import check_cluster_domain, parse_dns_address


@pytest.mark.parametrize("domain", ["cluster.local", "corp.example.com", "k8s"])
def test_valid_cluster_domains(domain: str) -> None:
    assert check_cluster_domain(domain) == domain


@pytest.mark.parametrize(
    ("domain", "rule"),
    [
        pytest.param("Cluster.Local", "a lowercase RFC 1123 subdomain", id="upper-case"),
        pytest.param("cluster.local.", "a lowercase RFC 1123 subdomain", id="trailing-dot"),
        pytest.param("", "a lowercase RFC 1123 subdomain", id="empty"),
        pytest.param("a" * 64 + ".local", "must be no more than 63 characters", id="long-label"),
    ],
)
def test_invalid_cluster_domain_names_the_flag_and_the_rule(domain: str, rule: str) -> None:
    with pytest.raises(ValueError) as err:
        check_cluster_domain(domain)
    assert str(err.value).startswith(f'--cluster-domain: Invalid value: "{domain}": ')
    assert rule in str(err.value)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        pytest.param("127.0.0.1", ("127.0.0.1", 53), id="default-port"),
        pytest.param("127.0.0.2:5353", ("127.0.0.2", 5353), id="port"),
        pytest.param("::1", ("::1", 53), id="ipv6-default-port"),
        pytest.param("[::1]:5353", ("::1", 5353), id="ipv6-port"),
        pytest.param("localhost:5353", ("localhost", 5353), id="hostname"),
    ],
)
def test_dns_address(text: str, address: tuple[str, int]) -> None:
    assert parse_dns_address(text) == address


@pytest.mark.parametrize("text", [":53", "127.0.0.1:x", "127.0.0.1:70000", "[::1", "[::1]x"])
def test_bad_dns_address(text: str) -> None:
    with pytest.raises(ValueError, match="--dns-address"):
        parse_dns_address(text)


@pytest.mark.parametrize("text", ["0.0.0.0", "0.0.0.0:5353", "::", "[::]:5353", "[::]"])
def test_wildcard_dns_address_needs_its_flag(text: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_dns_address(text)
    assert f"--dns-address {text!r}: a wildcard address" in str(err.value)
    assert "--dns-allow-wildcard" in str(err.value)
    assert parse_dns_address(text, allow_wildcard=True)[0] in ("0.0.0.0", "::")
