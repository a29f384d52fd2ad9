"""What a forked child of the test process computes, for values that must differ after a
fork (random pools and generators reseeded by `os.register_at_fork`)."""

from __future__ import annotations

import os
from collections.abc import Callable


def in_forked_child(compute: Callable[[], list[str]]) -> list[str]:
    """`compute()` run in a forked child; its words, read back through a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.write(write, " ".join(compute()).encode())
        finally:
            os._exit(0)
    os.close(write)
    words = os.read(read, 65536).decode().split()
    os.close(read)
    os.waitpid(pid, 0)
    return words
