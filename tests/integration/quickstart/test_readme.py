"""The README's quick start, run as written in a fresh clone of the repository.

The README is the single source: every fenced block preceded by an HTML comment
`<!-- quickstart -->` is a shell block run here, in document order, in one bash session
(so `source .venv/bin/activate`, `export KUBECONFIG=...` and a background `jobset dev &`
carry over from one block to the next, as in a user's terminal). A block preceded by
`<!-- quickstart: FILE -->` is not run but saved as FILE in the clone, as the README tells
the reader to do.

The clone is of the repository's committed HEAD (`git clone` of this working tree), so
only committed files take part: the `make` targets create the clone's own `.venv` (pip
finds packages as configured on the machine). stdin is not a terminal, so `make demo`
runs its examples, stops its cluster and exits (0 only if every example ended as
expected). The whole session is bounded in time; every process it started is killed at
the end, whatever happened.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.processgroup import own_group

ROOT = Path(__file__).resolve().parents[3]
MARKER = re.compile(r"^<!--\s*quickstart(?::\s*(?P<file>[\w./-]+))?\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
SESSION_TIMEOUT = 420.0  # seconds for the whole quick start (venv ~40 s, demo ~25 s, rest ~15 s)


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence in the README
    lang: str
    text: str
    save_as: str | None  # None: run it; else write it to this file


def quickstart_blocks(readme: str) -> list[Block]:
    """The fenced blocks that follow a `<!-- quickstart -->` comment (blank lines between
    the comment and the fence are allowed; anything else cancels the marker)."""
    lines = readme.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if m is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j].strip()) if j < len(lines) else None
        if fence is None:
            raise ValueError(f"README line {i + 1}: quickstart marker not followed by a fence")
        k = j + 1
        while k < len(lines) and lines[k].strip() != "```":
            k += 1
        if k == len(lines):
            raise ValueError(f"README line {j + 1}: unterminated fenced block")
        blocks.append(
            Block(
                line=j + 1,
                lang=fence.group("lang"),
                text="\n".join(lines[j + 1 : k]) + "\n",
                save_as=m.group("file"),
            )
        )
        i = k + 1
    return blocks


def session_script(blocks: list[Block]) -> str:
    """One bash script: run blocks verbatim, saved blocks written with a quoted heredoc."""
    parts = ["set -eo pipefail"]
    for n, block in enumerate(blocks):
        parts.append(f"echo '>>> quickstart block {n} (README line {block.line})'")
        if block.save_as is not None:
            delimiter = "QUICKSTART_EOF"
            assert delimiter not in block.text
            parts.append(f"cat > {block.save_as} <<'{delimiter}'\n{block.text}{delimiter}")
        else:
            assert block.lang in ("sh", "bash", "shell", ""), f"line {block.line}: {block.lang}"
            parts.append(block.text)
    parts.append("echo '>>> quickstart done'")
    return "\n".join(parts) + "\n"


def test_marker_parsing() -> None:
    text = (
        "intro\n<!-- quickstart -->\n\n```sh\necho a\n```\n"
        "```sh\nnot marked\n```\n"
        "<!-- quickstart: x.py -->\n```python\nprint(1)\n```\n"
    )
    blocks = quickstart_blocks(text)
    assert [(b.lang, b.text, b.save_as) for b in blocks] == [
        ("sh", "echo a\n", None),
        ("python", "print(1)\n", "x.py"),
    ]
    script = session_script(blocks)
    assert "not marked" not in script
    assert "cat > x.py <<'QUICKSTART_EOF'\nprint(1)\nQUICKSTART_EOF" in script
    with pytest.raises(ValueError, match="not followed by a fence"):
        quickstart_blocks("<!-- quickstart -->\ntext\n")


def test_readme_marks_the_quick_start() -> None:
    """The working tree's README marks the commands a new user runs first."""
    blocks = quickstart_blocks((ROOT / "README.md").read_text())
    run = "".join(b.text for b in blocks if b.save_as is None)
    for command in ("make demo", "jobset dev", "kubectl apply", "jobset watch", "jobset get"):
        assert command in run, f"no quickstart block runs {command!r}"
    assert "make test" not in run  # the test suite must not run itself
    assert any(b.save_as for b in blocks), "the SDK example is not marked"


def _clean_env(home: Path) -> dict[str, str]:
    """The environment of a user in a new shell: no virtualenv of this checkout active, no
    KUBECONFIG pointing at some other cluster."""
    env = dict(os.environ)
    venv = env.pop("VIRTUAL_ENV", None)
    for key in ("KUBECONFIG", "PYTHONPATH", "JOBSET_DEMO_EXIT", "JOBSET_DEMO_DIR", "MAKEFLAGS"):
        env.pop(key, None)
    own_bins = {str(ROOT / ".venv" / "bin")} | ({f"{venv}/bin"} if venv else set())
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p not in own_bins
    )
    env["HOME"] = env.get("HOME", str(home))
    return env


@pytest.mark.soak  # 90 s: a fresh venv; make test's own fresh-clone run and test_demo cover the rest
@pytest.mark.timeout(SESSION_TIMEOUT + 120)
def test_readme_quick_start_runs_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = tmp_path / "jobset-py"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)],
        check=True,
        timeout=120,
    )
    blocks = quickstart_blocks((clone / "README.md").read_text())
    assert blocks, "the committed README has no <!-- quickstart --> blocks"
    script = tmp_path / "quickstart.sh"
    script.write_text(session_script(blocks))
    log_path = tmp_path / "quickstart.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        # Its own process group, stopped at the end: whatever is left (a `jobset dev &` the
        # README did not stop, a hung command) goes with it.
        with own_group(
            ["bash", str(script)],
            cwd=clone,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_clean_env(tmp_path),
        ) as proc:
            try:
                code: int | None = proc.wait(timeout=SESSION_TIMEOUT)
            except subprocess.TimeoutExpired:
                code = None
    elapsed = time.monotonic() - started
    out = log_path.read_text()
    tail = out[-6000:]
    assert code is not None, f"quick start still running after {SESSION_TIMEOUT:.0f}s:\n{tail}"
    assert code == 0, f"quick start failed (exit {code}) after {elapsed:.0f}s:\n{tail}"
    assert ">>> quickstart done" in out, tail
    # make demo: every example ended as its file promises
    final = out.split("Final states:", 1)[-1]
    assert final.count("-> as expected") == 3 and "NOT as expected" not in final, tail
    # jobset watch saw the example complete; the SDK example printed its result
    assert "JobSet simple Completed" in out, tail
    assert "hello: Completed" in out, tail
    print(f"README quick start: {elapsed:.0f}s")
