"""The kubelet's image pulls for loaded repositories: what a kind node says and does."""

from __future__ import annotations

from typing import Any

from kubesim.kubelet.imagepull import ImagePuller

LOADED = {"docker.io/library/tiny:v1"}


class Store:
    def lookup(self, reference: str) -> Any:
        from kubesim.images.reference import normalize

        return reference if normalize(reference) in LOADED else None

    def has_repository(self, reference: str) -> bool:
        return reference.split(":")[0] in ("tiny", "docker.io/library/tiny")


def container(image: str, policy: str = "") -> dict[str, Any]:
    return {"name": "c", "image": image, **({"imagePullPolicy": policy} if policy else {})}


def test_only_repositories_with_a_loaded_image_are_decided_here() -> None:
    puller = ImagePuller(Store())
    assert puller.decides(container("tiny:v2"))
    assert not puller.decides(container("busybox"))  # a simulated program's image


def test_a_loaded_image_starts_unless_always_then_it_is_pulled_from_the_store() -> None:
    puller = ImagePuller(Store())
    for policy in ("IfNotPresent", "Never", "Always"):
        assert puller.ensure("uid", container("tiny:v1", policy), 0.0) is None


def test_never_and_absent_is_err_image_never_pull() -> None:
    out = ImagePuller(Store()).ensure("uid", container("tiny:v2", "Never"), 0.0)
    assert out is not None
    assert out.reason == "ErrImageNeverPull"
    assert out.message == 'Container image "tiny:v2" is not present with pull policy of Never'
    assert out.events == (
        ("Warning", "ErrImageNeverPull", out.message),
        ("Warning", "Failed", "Error: ErrImageNeverPull"),
    )


def test_a_failed_pull_then_back_off_doubling_as_the_kubelets() -> None:
    puller = ImagePuller(Store(), time_scale=0.5)
    first = puller.ensure("uid", container("tiny:v2"), 100.0)
    assert first is not None and first.reason == "ErrImagePull"
    ref = "docker.io/library/tiny:v2"
    assert first.message == (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
        f'failed to resolve reference "{ref}": {ref}: not found'
    )
    assert [e[1] for e in first.events] == ["Pulling", "Failed", "Failed"]
    assert first.events[1][2] == f'Failed to pull image "tiny:v2": {first.message}'
    assert first.retry_at == 100.5  # the next sync shows the back-off
    waiting = puller.ensure("uid", container("tiny:v2"), 100.5)
    assert waiting is not None and waiting.reason == "ImagePullBackOff"
    assert waiting.message == 'Back-off pulling image "tiny:v2"'
    assert waiting.events == (
        ("Normal", "BackOff", waiting.message),
        ("Warning", "Failed", "Error: ImagePullBackOff"),
    )
    assert waiting.retry_at == 105.0  # 10 s, times --time-scale
    second = puller.ensure("uid", container("tiny:v2"), 105.0)
    assert second is not None and second.reason == "ErrImagePull"
    again = puller.ensure("uid", container("tiny:v2"), 106.0)
    assert again is not None and again.retry_at == 115.0  # 20 s the second time
    puller.forget("uid")
    fresh = puller.ensure("uid", container("tiny:v2"), 106.0)
    assert fresh is not None and fresh.reason == "ErrImagePull"


def test_default_policy_of_a_latest_tag_is_always() -> None:
    out = ImagePuller(Store()).ensure("uid", container("tiny"), 0.0)
    assert out is not None and out.reason == "ErrImagePull"


def test_containers_a_run_image_mapping_claims_pull_nothing() -> None:
    puller = ImagePuller(Store(), exempt=lambda c: c["image"].startswith("tiny:v2"))
    assert not puller.decides(container("tiny:v2"))
    assert puller.decides(container("tiny:v3"))
