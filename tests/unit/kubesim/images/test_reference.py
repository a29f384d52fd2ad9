"""Image references normalized as containerd's `ParseDockerRef` does."""

from __future__ import annotations

import pytest

from kubesim.images.reference import InvalidReference, normalize, parse

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("reference", "normalized"),
    [
        pytest.param("busybox", "docker.io/library/busybox:latest", id="official-image"),
        pytest.param("busybox:1.36", "docker.io/library/busybox:1.36", id="tag"),
        pytest.param("library/busybox", "docker.io/library/busybox:latest", id="library"),
        pytest.param("index.docker.io/busybox", "docker.io/library/busybox:latest", id="legacy"),
        pytest.param("kindest/node:v1.32.0", "docker.io/kindest/node:v1.32.0", id="hub-user"),
        pytest.param("ghcr.io/x/y", "ghcr.io/x/y:latest", id="registry"),
        pytest.param("localhost/y:dev", "localhost/y:dev", id="localhost"),
        pytest.param("registry:5000/x", "registry:5000/x:latest", id="port"),
        pytest.param(f"busybox@{DIGEST}", f"docker.io/library/busybox@{DIGEST}", id="digest"),
        pytest.param(
            f"busybox:1@{DIGEST}", f"docker.io/library/busybox@{DIGEST}", id="tag-dropped"
        ),
    ],
)
def test_normalize(reference: str, normalized: str) -> None:
    assert normalize(reference) == normalized


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        pytest.param("", "at least one component", id="empty"),
        pytest.param("BusyBox", "must be lowercase", id="uppercase"),
        pytest.param("busybox:-x", "invalid tag", id="tag"),
        pytest.param("busybox@sha256:abc", "invalid digest", id="short-digest"),
        pytest.param("a b", "invalid reference format", id="space"),
    ],
)
def test_invalid_references_are_refused_with_containerds_words(
    reference: str, message: str
) -> None:
    with pytest.raises(InvalidReference, match=message):
        parse(reference)


def test_parse_keeps_repository_tag_and_digest_apart() -> None:
    ref = parse("example.com/team/train:v2")
    assert (ref.repository, ref.tag, ref.digest) == ("example.com/team/train", "v2", "")
