"""Names and formats: domain-prefixed paths, the name a JobSet will have, and the texts of
the name-length rules. The DNS-1123 / DNS-1035 / label checks themselves are
`kubeutil.names` (shared with the simulated cluster)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from jobset.api.validation.errors import FieldError, invalid, required
from kubeutil.names import is_dns1123_subdomain, regex_error

__all__ = [
    "DNS1035_TOO_LONG",
    "GROUP_NAME_TOO_LONG_MSG",
    "JOB_NAME_TOO_LONG_MSG",
    "MAX_RULE_NAME",
    "MIN_RULE_NAME",
    "POD_NAME_TOO_LONG_MSG",
    "POD_SUFFIX",
    "RULE_NAME_RE",
    "SUBDOMAIN_TOO_LONG_MSG",
    "is_domain_prefixed_path",
    "name_for_validation",
]

_HTTP_PATH_FMT: Final = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE: Final = re.compile(_HTTP_PATH_FMT)


def is_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """Errors unless `value` looks like `acme.io/foo` (RFC 1123 host, RFC 3986 path)."""
    if not value:
        return [required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.fullmatch(rest):
        errs.append(invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


DNS1035_TOO_LONG: Final = "must be no more than 63 characters"
GROUP_NAME_TOO_LONG_MSG: Final = (
    ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
)
JOB_NAME_TOO_LONG_MSG: Final = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG_MSG: Final = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)
SUBDOMAIN_TOO_LONG_MSG: Final = (
    ".spec.network.subdomain is too long, must be less than 63 characters"
)
RULE_NAME_RE: Final = re.compile("[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
MIN_RULE_NAME: Final = 1
MAX_RULE_NAME: Final = 128
# The API server's generateName: at most 58 characters of prefix, then 5 random characters.
_GENERATED_PREFIX_MAX: Final = 58
# Stands for the random part: any 5 characters of the generator's alphabet (lower-case
# consonants and digits) give the same verdict for every check below.
_GENERATED_SUFFIX: Final = "xxxxx"
# Suffix the API server adds to the pod names of a Job, counted in the pod-name check.
POD_SUFFIX: Final = "-abcde"


def name_for_validation(js: Mapping[str, Any]) -> str:
    """The name the JobSet will have: metadata.name, or what generateName will produce.

    Only the length and character classes of the random part matter to validation, so a
    fixed stand-in keeps validation deterministic.
    """
    meta = js.get("metadata") or {}
    if meta.get("name"):
        return str(meta["name"])
    base = str(meta.get("generateName") or "")
    if base:
        return base[:_GENERATED_PREFIX_MAX] + _GENERATED_SUFFIX
    return ""
