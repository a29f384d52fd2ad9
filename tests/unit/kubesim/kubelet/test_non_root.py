"""`runAsNonRoot` as the kubelet verifies it: the runAsUser, else the image's user."""

from __future__ import annotations

import pytest

from kubesim.kubelet.security import non_root_refusal

ROOT = "container has runAsNonRoot and image will run as root"

CASES = [
    pytest.param(None, "1000:1000", None, id="numeric-image-user"),
    pytest.param(None, "1000", None, id="numeric-image-user-no-group"),
    pytest.param(None, "", ROOT, id="no-image-user-is-root"),
    pytest.param(None, "0:0", ROOT, id="image-user-root"),
    pytest.param(
        None,
        "app:app",
        "container has runAsNonRoot and image has non-numeric user (app), "
        "cannot verify user is non-root",
        id="named-image-user",
    ),
    pytest.param(0, "1000", "container's runAsUser breaks non-root policy", id="run-as-root"),
    pytest.param(1000, "", None, id="run-as-user-wins-over-root-image"),
    pytest.param(1000, "app", None, id="run-as-user-wins-over-named-image"),
]


@pytest.mark.parametrize(("run_as_user", "image_user", "refusal"), CASES)
def test_non_root_is_judged_by_the_user_that_will_run(
    run_as_user: int | None, image_user: str, refusal: str | None
) -> None:
    assert non_root_refusal(run_as_user, image_user) == refusal
