"""Text from the cluster made safe to print on a terminal.

Event and condition messages are written by whoever may create Events or patch a status, so
a message could carry escape sequences that retitle the window, clear the screen, hide text
or (OSC 52) write the clipboard. kubectl prints `ESC` as `^[` and a carriage return as `\\r`
(cli-runtime's `EscapeTerminal`); every other C0 and C1 control is shown too, as `^X` and
`\\x9b`, so nothing but newlines and tabs reaches the terminal as a control.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["escape_terminal"]

_CONTROLS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(match: re.Match[str]) -> str:
    ch = ord(match.group())
    if ch == 0x0D:
        return "\\r"
    if ch < 0x20:
        return "^" + chr(ch + 0x40)  # ESC is ^[, BEL is ^G
    if ch == 0x7F:
        return "^?"
    return f"\\x{ch:02x}"  # C1 controls: CSI (0x9b), OSC (0x9d), ...


def escape_terminal(text: str) -> str:
    """`text` with every terminal control but newline and tab shown as visible characters."""
    return _CONTROLS.sub(_shown, text)
