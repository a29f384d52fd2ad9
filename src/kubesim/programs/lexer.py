"""The shell's lexer: words (with their quoted and expanded parts), operators and redirections."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from kubesim.programs.common import Unsupported

# A word part: ("lit", text, quoted) or ("exp", "$NAME" / "${...}" / "$(...)" / ..., quoted).
Part = tuple[str, str, bool]


@dataclass(frozen=True)
class Word:
    parts: tuple[Part, ...]

    @property
    def plain(self) -> str | None:
        """The text if the word is unquoted literal text (candidate reserved word)."""
        if all(kind == "lit" and not quoted for kind, _, quoted in self.parts):
            return "".join(text for _, text, _ in self.parts)
        return None

    def has_glob(self) -> bool:
        return any(k == "lit" and not q and any(c in t for c in "*?[") for k, t, q in self.parts)


# Tokens: ("word", Word) | ("op", str) | ("arith", str) | ("redir", str)
Tok = tuple[str, Any]


_OPS: Final = ("&&", "||", ";;", "|", "&", ";", "(", ")")


_REDIRS: Final = ("&>>", "&>", ">>", ">&", "<&", ">|", "<>", ">", "<")


NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_REDIR_RE: Final = re.compile(r"\d*(?:&>>|&>|>>|>&|<&|>\||<>|>|<)")


LOG_PATHS: Final = frozenset({"/dev/stdout", "/dev/stderr", "/proc/1/fd/1", "/proc/1/fd/2"})


def lex(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\r":
            i += 1
        elif c == "\\" and src.startswith("\\\n", i):
            i += 2
        elif c == "\n":
            toks.append(("op", "\n"))
            i += 1
        elif c == "#":
            while i < n and src[i] != "\n":
                i += 1
        elif src.startswith("((", i):
            end = _match_close(src, i + 2, "(", ")", depth=2)
            if end is None or not src.startswith("))", end - 1):
                toks.append(("op", "("))
                i += 1
            else:
                toks.append(("arith", src[i + 2 : end - 1]))
                i = end + 1
        elif src.startswith("<<", i):
            raise Unsupported("here-documents")
        else:
            m = _REDIR_RE.match(src, i)
            if m:
                toks.append(("redir", m.group(0)))
                i = m.end()
                continue
            for op in _OPS:
                if src.startswith(op, i):
                    toks.append(("op", op))
                    i += len(op)
                    break
            else:
                word, i = _lex_word(src, i)
                toks.append(("word", word))
    return toks


def _match_close(src: str, i: int, open_c: str, close_c: str, depth: int = 1) -> int | None:
    """Index of the character closing a construct opened before `i`, skipping quotes."""
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_c != "{":
            j = src.find("'", i + 1)
            if j < 0:
                return None
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _read_expansion(src: str, i: int) -> tuple[str, int]:
    """Read the `$...` or backquote unit starting at `i`; returns (text, next index)."""
    n = len(src)
    if src[i] == "`":
        j = src.find("`", i + 1)
        if j < 0:
            raise Unsupported("unterminated backquote")
        return src[i : j + 1], j + 1
    if src.startswith("$((", i):
        end = _match_close(src, i + 3, "(", ")", depth=2)
        if end is not None and src.startswith("))", end - 1):
            return src[i : end + 1], end + 1
    if src.startswith("$(", i):
        end = _match_close(src, i + 2, "(", ")")
        if end is None:
            raise Unsupported("unterminated $(")
        return src[i : end + 1], end + 1
    if src.startswith("${", i):
        end = _match_close(src, i + 2, "{", "}")
        if end is None:
            raise Unsupported("unterminated ${")
        return src[i : end + 1], end + 1
    if i + 1 < n:
        m = NAME_RE.match(src, i + 1)
        if m:
            return src[i : m.end()], m.end()
        if src[i + 1] in "0123456789?$#@*!-":
            return src[i : i + 2], i + 2
    return "", i  # a lone "$" is literal


def _lex_word(src: str, i: int) -> tuple[Word, int]:
    parts: list[Part] = []
    buf: list[str] = []

    def flush(quoted: bool) -> None:
        if buf:
            parts.append(("lit", "".join(buf), quoted))
            buf.clear()

    n = len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n;&|()<>":
            break
        if c == "\\":
            if i + 1 < n and src[i + 1] != "\n":
                flush(False)
                parts.append(("lit", src[i + 1], True))
            i += 2
        elif c == "'":
            j = src.find("'", i + 1)
            if j < 0:
                raise Unsupported("unterminated quote")
            flush(False)
            parts.append(("lit", src[i + 1 : j], True))
            i = j + 1
        elif c == '"':
            flush(False)
            i = lex_double_quoted(src, i + 1, parts)
        elif c in "$`":
            text, j = _read_expansion(src, i)
            if not text:
                buf.append(c)
                i += 1
            else:
                flush(False)
                parts.append(("exp", text, False))
                i = j
        else:
            buf.append(c)
            i += 1
    flush(False)
    return Word(tuple(parts)), i


def lex_double_quoted(src: str, i: int, parts: list[Part]) -> int:
    """Lex the inside of "...", appending quoted parts; returns the index after the quote."""
    buf: list[str] = []
    n = len(src)
    parts.append(("lit", "", True))  # "" is still a (empty) word
    while i < n:
        c = src[i]
        if c == '"':
            if buf:
                parts.append(("lit", "".join(buf), True))
            return i + 1
        if c == "\\" and i + 1 < n and src[i + 1] in '$`"\\\n':
            if src[i + 1] != "\n":
                buf.append(src[i + 1])
            i += 2
        elif c in "$`":
            text, j = _read_expansion(src, i)
            if not text:
                buf.append(c)
                i += 1
            else:
                if buf:
                    parts.append(("lit", "".join(buf), True))
                    buf.clear()
                parts.append(("exp", text, True))
                i = j
        else:
            buf.append(c)
            i += 1
    raise Unsupported("unterminated double quote")
