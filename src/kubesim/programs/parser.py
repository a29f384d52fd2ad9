"""The shell's parser: tokens to an AST of tuples tagged by their first element (`("if", ...)`)."""

from __future__ import annotations

import re
from typing import Any

from kubesim.programs.common import Unsupported
from kubesim.programs.lexer import NAME_RE, Tok, Word, lex

# ---------------------------------------------------------------------------------------------
# Shell: parser (AST as tuples, tagged by their first element)

Node = tuple[Any, ...]


class _Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.pos = 0

    def peek(self) -> Tok | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def peek_word(self) -> str | None:
        tok = self.peek()
        if tok is not None and tok[0] == "word":
            plain: str | None = tok[1].plain
            return plain
        return None

    def at_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "op" and tok[1] in ops

    def expect_word(self, word: str) -> None:
        if self.peek_word() != word:
            raise Unsupported(f"expected {word}")
        self.pos += 1

    def skip_newlines(self) -> None:
        while self.at_op("\n"):
            self.pos += 1

    def parse_program(self) -> Node:
        node = self.parse_list(frozenset())
        if self.peek() is not None:
            raise Unsupported(f"unexpected {self.peek()!r}")
        return node

    def parse_list(self, stops: frozenset[str]) -> Node:
        items: list[tuple[Node, bool]] = []
        while True:
            while self.at_op("\n", ";"):
                self.pos += 1
            tok = self.peek()
            if tok is None or self.peek_word() in stops or self.at_op(")", ";;"):
                break
            and_or = self.parse_and_or()
            background = self.at_op("&")
            if background or self.at_op(";", "\n"):
                self.pos += 1
            elif self.peek() is not None and self.peek_word() not in stops and not self.at_op(")"):
                raise Unsupported(f"unexpected {self.peek()!r}")
            items.append((and_or, background))
        return ("list", items)

    def parse_and_or(self) -> Node:
        first = self.parse_pipeline()
        rest: list[tuple[str, Node]] = []
        while self.at_op("&&", "||"):
            op = self.toks[self.pos][1]
            self.pos += 1
            self.skip_newlines()
            rest.append((op, self.parse_pipeline()))
        return ("and_or", first, rest)

    def parse_pipeline(self) -> Node:
        negate = False
        while self.peek_word() == "!":
            negate = not negate
            self.pos += 1
        cmds = [self.parse_command()]
        while self.at_op("|"):
            self.pos += 1
            self.skip_newlines()
            cmds.append(self.parse_command())
        return ("pipeline", negate, cmds)

    def parse_command(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise Unsupported("missing command")
        word = self.peek_word()
        node: Node
        if tok[0] == "arith":
            self.pos += 1
            node = ("arith", tok[1])
        elif word == "if":
            node = self.parse_if()
        elif word == "for":
            node = self.parse_for()
        elif word in ("while", "until"):
            self.pos += 1
            cond = self.parse_list(frozenset({"do"}))
            self.expect_word("do")
            body = self.parse_list(frozenset({"done"}))
            self.expect_word("done")
            node = ("while", word == "until", cond, body)
        elif word == "{":
            self.pos += 1
            body = self.parse_list(frozenset({"}"}))
            self.expect_word("}")
            node = ("group", body)
        elif word == "[[":
            self.pos += 1
            parts: list[Tok] = []
            while self.peek_word() != "]]":
                t = self.peek()
                if t is None:
                    raise Unsupported("unterminated [[")
                parts.append(t)
                self.pos += 1
            self.pos += 1
            node = ("cond", parts)
        elif word in ("case", "function", "select", "coproc"):
            raise Unsupported(word)
        elif self.at_op("("):
            self.pos += 1
            body = self.parse_list(frozenset())
            if not self.at_op(")"):
                raise Unsupported("unterminated (")
            self.pos += 1
            node = ("subshell", body)
        else:
            return self.parse_simple()
        redirs = self.parse_redirections()
        return ("redirected", node, redirs) if redirs else node

    def parse_redirections(self) -> list[tuple[str, Word]]:
        out: list[tuple[str, Word]] = []
        while True:
            tok = self.peek()
            if tok is None or tok[0] != "redir":
                return out
            self.pos += 1
            target = self.peek()
            if target is None or target[0] != "word":
                raise Unsupported("redirection without target")
            self.pos += 1
            out.append((tok[1], target[1]))

    def parse_simple(self) -> Node:
        assigns: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirs: list[tuple[str, Word]] = []
        while True:
            tok = self.peek()
            if tok is None:
                break
            if tok[0] == "redir":
                redirs.extend(self.parse_redirections())
                continue
            if tok[0] != "word":
                if tok[0] == "op" and tok[1] == "(" and len(words) == 1 and not assigns:
                    raise Unsupported("function definition")
                break
            word: Word = tok[1]
            if not words:
                first = word.parts[0] if word.parts else None
                if first and first[0] == "lit" and not first[2]:
                    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=", first[1])
                    if m:
                        rest = first[1][m.end() :]
                        value_parts = ((("lit", rest, False),) if rest else ()) + word.parts[1:]
                        assigns.append((m.group(1) + m.group(2), Word(value_parts)))
                        self.pos += 1
                        continue
            words.append(word)
            self.pos += 1
        if not words and not assigns and not redirs:
            raise Unsupported(f"unexpected {self.peek()!r}")
        return ("simple", assigns, words, redirs)

    def parse_if(self) -> Node:
        self.expect_word("if")
        clauses: list[tuple[Node, Node]] = []
        cond = self.parse_list(frozenset({"then"}))
        self.expect_word("then")
        body = self.parse_list(frozenset({"elif", "else", "fi"}))
        clauses.append((cond, body))
        else_body: Node | None = None
        while True:
            word = self.peek_word()
            if word == "elif":
                self.pos += 1
                cond = self.parse_list(frozenset({"then"}))
                self.expect_word("then")
                body = self.parse_list(frozenset({"elif", "else", "fi"}))
                clauses.append((cond, body))
            elif word == "else":
                self.pos += 1
                else_body = self.parse_list(frozenset({"fi"}))
            else:
                self.expect_word("fi")
                return ("if", clauses, else_body)

    def parse_for(self) -> Node:
        self.expect_word("for")
        tok = self.peek()
        if tok is not None and tok[0] == "arith":
            self.pos += 1
            while self.at_op(";", "\n"):
                self.pos += 1
            self.expect_word("do")
            body = self.parse_list(frozenset({"done"}))
            self.expect_word("done")
            return ("cfor", tok[1], body)
        name = self.peek_word()
        if name is None or not NAME_RE.fullmatch(name):
            raise Unsupported("bad for loop")
        self.pos += 1
        self.skip_newlines()
        words: list[Word] | None = None
        if self.peek_word() == "in":
            self.pos += 1
            words = []
            while True:
                t = self.peek()
                if t is None or t[0] != "word":
                    break
                words.append(t[1])
                self.pos += 1
        while self.at_op(";", "\n"):
            self.pos += 1
        self.expect_word("do")
        body = self.parse_list(frozenset({"done"}))
        self.expect_word("done")
        return ("for", name, words, body)


def parse_script(src: str) -> Node:
    return _Parser(lex(src)).parse_program()
