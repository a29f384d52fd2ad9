"""Base64 decoded as Go's `encoding/base64.StdEncoding` decodes a JSON `[]byte` field.

kube-apiserver decodes a Secret's `data` (and a ConfigMap's `binaryData`) while it reads the
request body, so a bad value fails the whole request with Go's `CorruptInputError`, whose
text names the offending byte offset. Python's `base64` neither reports an offset nor treats
padding, newlines and trailing data as Go does; this is written by hand to give the same
offset (Go's `decodeQuantum`), since clients show that message to the user.
"""

from __future__ import annotations

import base64
import binascii

__all__ = ["CorruptInputError", "decode"]

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_NEWLINES = (ord("\n"), ord("\r"))
_PAD = ord("=")


class CorruptInputError(ValueError):
    """Go's `base64.CorruptInputError`: the offset of the first illegal byte."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")
        self.offset = offset


def _skip_newlines(src: bytes, si: int) -> int:
    while si < len(src) and src[si] in _NEWLINES:
        si += 1
    return si


def _quantum(src: bytes, si: int) -> tuple[int, bool]:
    """Check one 4-character quantum from `si` (Go's `decodeQuantum`); the next index and
    whether the input ended with it."""
    j = 0
    while j < 4:
        if si == len(src):
            if j == 0:
                return si, True
            raise CorruptInputError(si - j)
        ch = src[si]
        si += 1
        if ch in _ALPHABET:
            j += 1
            continue
        if ch in _NEWLINES:
            continue
        if ch != _PAD or j < 2:
            raise CorruptInputError(si - 1)
        if j == 2:  # "==" expected: the first "=" is consumed
            si = _skip_newlines(src, si)
            if si == len(src):
                raise CorruptInputError(len(src))
            if src[si] != _PAD:
                raise CorruptInputError(si - 1)
            si += 1
        si = _skip_newlines(src, si)
        if si < len(src):
            raise CorruptInputError(si)  # trailing garbage after the padding
        return si, True
    return si, False


def decode(text: str) -> bytes:
    """The bytes of `text`, or CorruptInputError at the offset Go reports."""
    src = text.encode("utf-8")
    si, done = 0, False
    while not done:
        si, done = _quantum(src, si)
    cleaned = bytes(ch for ch in src if ch not in _NEWLINES)
    try:
        return base64.b64decode(cleaned, validate=True)
    except binascii.Error as exc:  # not expected once the scan passed; kept as Go's error
        raise CorruptInputError(len(src)) from exc
