"""AdmissionReview decoding, certificate checks, and the generated config/webhook files."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest

from jobset.webhooks import certs
from jobset.webhooks.certcontroller import CertOptions
from jobset.webhooks.manifests import rendered_files
from jobset.webhooks.review import AdmissionResponse, ReviewError, decode_review, encode_review

ROOT = Path(__file__).resolve().parents[3]


def review(**request: object) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "CREATE", **request},
        }
    ).encode()


def test_decode_reads_the_request() -> None:
    req = decode_review(review(namespace="ns", object={"a": 1}), "application/json; charset=utf-8")
    assert (req.uid, req.operation, req.namespace, req.object) == ("u", "CREATE", "ns", {"a": 1})


@pytest.mark.parametrize(
    ("body", "ctype", "text"),
    [
        (b"", "application/json", "empty"),
        (b"{", "application/json", "couldn't decode"),
        (b"[]", "application/json", "not a JSON object"),
        (b'{"kind":"AdmissionReview","apiVersion":[]}', "application/json", "unsupported review"),
        (review(uid=""), "application/json", "no uid"),
        (review(operation="PATCH"), "application/json", "unsupported operation"),
        (review(object=[1]), "application/json", "request.object must be an object"),
        (review(dryRun="yes"), "application/json", "dryRun must be a boolean"),
        (b"{}", "text/yaml", "expected application/json"),
    ],
    ids=[
        "empty body",
        "truncated JSON",
        "not an object",
        "unsupported review version",
        "no uid",
        "unsupported operation",
        "object not an object",
        "dryRun not a boolean",
        "wrong content type",
    ],
)
def test_decode_rejects_malformed_reviews_with_a_reason(body: bytes, ctype: str, text: str) -> None:
    with pytest.raises(ReviewError) as err:
        decode_review(body, ctype)
    assert text in err.value.message and err.value.code == 400


def test_encode_carries_uid_patch_and_status() -> None:
    out = json.loads(encode_review(AdmissionResponse.patched({"a": 1}, {"a": 2}), "u"))
    assert out["response"]["uid"] == "u" and out["response"]["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(out["response"]["patch"])) == [
        {"op": "replace", "path": "/a", "value": 2}
    ]
    denied = json.loads(encode_review(AdmissionResponse.deny("no"), "u"))["response"]
    assert denied["allowed"] is False and denied["status"]["code"] == 403
    assert (
        "patch"
        not in json.loads(encode_review(AdmissionResponse.patched({"a": 1}, {"a": 1}), "u"))[
            "response"
        ]
    )


def test_a_fresh_bundle_is_good_and_names_the_service() -> None:
    b = certs.issue_bundle(["svc.ns.svc", "localhost"])
    assert b.problem("svc.ns.svc") is None
    assert "not valid for other.ns.svc" in (b.problem("other.ns.svc") or "")


def test_a_bundle_must_name_every_service_it_serves() -> None:
    """An upgrade that has the metrics server present the internal certificate too adds the
    metrics Service's name: a certificate without it is replaced."""
    webhook_only = certs.issue_bundle(["svc.ns.svc"])
    both = ["svc.ns.svc", "metrics.ns.svc"]
    assert "not valid for metrics.ns.svc" in (webhook_only.problem(both) or "")
    assert certs.issue_bundle(both).problem(both) is None
    opts = CertOptions(namespace="ns", metrics_service_name="metrics")
    assert opts.dns_names == ["jobset-webhook-service.ns.svc", "metrics.ns.svc"]
    assert CertOptions(namespace="ns").dns_names == ["jobset-webhook-service.ns.svc"]


def test_bundles_near_expiry_or_mismatched_are_replaced() -> None:
    b = certs.issue_bundle(["s"], dt.timedelta(days=30))
    assert "expires" in (b.problem("s") or "")  # inside the default 90-day look-ahead
    assert b.problem("s", dt.timedelta(days=1)) is None
    other = certs.issue_bundle(["s"])
    assert (
        certs.CertBundle(b.ca_cert, b.ca_key, other.cert, other.key).problem("s")
        == "certificate is not signed by the CA"
    )
    assert (
        certs.CertBundle(b.ca_cert, b.ca_key, b.cert, other.key).problem("s", dt.timedelta(0))
        == "key does not match the certificate"
    )
    assert "unreadable" in (certs.CertBundle(b"x", b"y", b"z", b"w").problem("s") or "")


def test_rotation_keeps_a_good_ca_and_replaces_a_dying_one() -> None:
    now = dt.datetime.now(dt.UTC)
    b = certs.issue_bundle(
        ["s"],
        dt.timedelta(days=10),
        ca_validity=dt.timedelta(days=100),
        lookahead=dt.timedelta(days=5),
    )
    renewed = certs.issue_bundle(
        ["s"], dt.timedelta(days=10), reuse_ca=b, lookahead=dt.timedelta(days=5)
    )
    assert renewed.ca_cert == b.ca_cert and renewed.cert != b.cert
    later = now + dt.timedelta(days=97)
    replaced = certs.issue_bundle(
        ["s"], dt.timedelta(days=10), reuse_ca=b, lookahead=dt.timedelta(days=5), now=later
    )
    assert replaced.ca_cert != b.ca_cert
    # The old CA (still valid) stays in the bundle after the new one.
    assert replaced.ca_cert.endswith(b.ca_cert)
    assert replaced.ca_cert.count(b"BEGIN CERTIFICATE") == 2
    assert replaced.problem("s", dt.timedelta(days=5), now=later) is None


def test_config_webhook_matches_the_generator() -> None:
    for name, text in rendered_files().items():
        assert (ROOT / "config" / "webhook" / name).read_text() == text, (
            f"config/webhook/{name} is stale: run python -m jobset.webhooks.manifests config/webhook"
        )
