"""Image references, normalized as containerd (and so kind) stores and looks them up.

`busybox` is `docker.io/library/busybox:latest`, `ghcr.io/x/y` is `ghcr.io/x/y:latest`, and a
reference with a digest keeps the digest and drops its tag (`ParseDockerRef` in containerd's
`reference/docker`, after distribution's grammar). Pure: no I/O.

Hand-written: the grammar is a few regular expressions, and no maintained Python library
carries distribution's normalization rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["ImageRef", "InvalidReference", "normalize", "parse"]

DEFAULT_DOMAIN: Final = "docker.io"
LEGACY_DEFAULT_DOMAIN: Final = "index.docker.io"
OFFICIAL_PREFIX: Final = "library/"
MAX_NAME: Final = 255  # distribution's NameTotalLengthMax

_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_PART: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN: Final = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?"
_PATH: Final = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_DOMAIN_RE: Final = re.compile(_DOMAIN)
_TAG: Final = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST: Final = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}")
_SHA256: Final = re.compile(r"sha256:[0-9a-f]{64}")


class InvalidReference(ValueError):
    """A reference that is not a valid image name (containerd's wording)."""


@dataclass(frozen=True)
class ImageRef:
    """A normalized reference: `repository` always has its domain (`docker.io/library/x`)."""

    repository: str
    tag: str = ""
    digest: str = ""

    def __str__(self) -> str:
        if self.digest:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag or 'latest'}"


def _split_domain(name: str) -> tuple[str, str]:
    """Domain and path of a name, with Docker Hub's defaults (splitDockerDomain)."""
    first, sep, rest = name.partition("/")
    if not sep or (
        "." not in first and ":" not in first and first != "localhost" and first.lower() == first
    ):
        domain, path = DEFAULT_DOMAIN, name
    else:
        domain, path = first, rest
    if domain == LEGACY_DEFAULT_DOMAIN:
        domain = DEFAULT_DOMAIN
    if domain == DEFAULT_DOMAIN and "/" not in path:
        path = OFFICIAL_PREFIX + path
    return domain, path


def parse(reference: str) -> ImageRef:
    """`reference` normalized; InvalidReference when it is not an image reference."""
    if not reference:
        raise InvalidReference(
            "invalid reference format: repository name must have at least one component"
        )
    name, _, digest = reference.partition("@")
    tag = ""
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name[: len(name) - len(last)] + last.split(":", 1)[0], last.split(":", 1)[1]
    if digest and not _DIGEST.fullmatch(digest):
        raise InvalidReference(f"invalid reference format: invalid digest {digest!r}")
    if digest.startswith("sha256:") and not _SHA256.fullmatch(digest):
        raise InvalidReference(f"invalid checksum digest format: {digest!r}")
    if tag and not _TAG.fullmatch(tag):
        raise InvalidReference(f"invalid reference format: invalid tag {tag!r}")
    if name.lower() != name and "/" not in name:
        raise InvalidReference("invalid reference format: repository name must be lowercase")
    domain, path = _split_domain(name)
    if not _DOMAIN_RE.fullmatch(domain) or not _PATH.fullmatch(path):
        if path.lower() != path:
            raise InvalidReference("invalid reference format: repository name must be lowercase")
        raise InvalidReference(f"invalid reference format: {reference!r}")
    repository = f"{domain}/{path}"
    if len(repository) > MAX_NAME:
        raise InvalidReference(f"repository name must not be more than {MAX_NAME} characters")
    # A digest pins the content: the tag beside it is dropped (ParseDockerRef).
    return ImageRef(repository, "" if digest else (tag or "latest"), digest)


def normalize(reference: str) -> str:
    """The name containerd stores for `reference` (`busybox` -> docker.io/library/busybox:latest)."""
    return str(parse(reference))
