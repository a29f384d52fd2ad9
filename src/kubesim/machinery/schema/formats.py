"""The OpenAPI string formats kube-apiserver checks, loosely: date-time, date, duration, byte, uuid,
ipv4, ipv6, cidr, mac, hostname, email, hexcolor, rgbcolor, bsonobjectid.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import uuid
from collections.abc import Callable

# ------------------------------------------------------------------------------------------------
# String formats


_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?)?$"
)


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w))+$|^[-+]?0$")


_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5,19}[0-9A-Fa-f]{2}$")


_HEXCOLOR = re.compile(r"^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$")


_RGBCOLOR = re.compile(r"^rgb\(\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*\)$")


_BSON = re.compile(r"^[0-9a-fA-F]{24}$")


_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def _is_ip(s: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(s).version == version
    except ValueError:
        return False


def _is_cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _is_byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except ValueError:
        return False
    return True


def _is_uuid_version(version: int) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            return _UUID.match(s) is not None and uuid.UUID(s).version == version
        except ValueError:
            return False

    return check


# The formats kube-apiserver validates for strings; every other format is stripped from the
# schema before validation and so accepted.
FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": lambda s: _DATE_TIME.match(s) is not None and "T" in s.upper(),
    "datetime": lambda s: _DATE_TIME.match(s) is not None and "T" in s.upper(),
    "date": lambda s: _DATE.match(s) is not None,
    "duration": lambda s: _GO_DURATION.match(s) is not None,
    "byte": _is_byte,
    "uuid": lambda s: _UUID.match(s) is not None,
    "uuid3": _is_uuid_version(3),
    "uuid4": _is_uuid_version(4),
    "uuid5": _is_uuid_version(5),
    "ipv4": lambda s: _is_ip(s, 4),
    "ipv6": lambda s: _is_ip(s, 6),
    "cidr": _is_cidr,
    "mac": lambda s: _MAC.match(s) is not None,
    "hostname": lambda s: _HOSTNAME.match(s) is not None,
    "email": lambda s: _EMAIL.match(s) is not None,
    "hexcolor": lambda s: _HEXCOLOR.match(s) is not None,
    "rgbcolor": lambda s: _RGBCOLOR.match(s) is not None,
    "bsonobjectid": lambda s: _BSON.match(s) is not None,
}
