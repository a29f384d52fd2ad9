"""`jobset completion bash|zsh|fish`: the bash script loads in bash and completes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobset.cli import build_parser
from jobset.commands.completion import script

BASH = shutil.which("bash")


def _complete(words: list[str], tmp_path: Path) -> list[str]:
    """Load the script as `source <(jobset completion bash)` would and complete `words`
    (the last one is the word under the cursor)."""
    path = tmp_path / "jobset.bash"
    path.write_text(script(build_parser(), "bash", "jobset"))
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {path} && complete -p jobset >/dev/null && "
        f"COMP_WORDS=({quoted}) && COMP_CWORD={len(words) - 1} && _jobset_complete && "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    assert BASH is not None, "bash is needed to check the completion script"
    res = subprocess.run([BASH, "-c", program], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if line]


def test_the_real_command_prints_a_script_bash_loads() -> None:
    assert BASH is not None, "bash is needed to check the completion script"
    jobset = Path(sys.executable).with_name("jobset")
    res = subprocess.run(
        [BASH, "-c", f"source <({jobset} completion bash) && complete -p jobset"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "complete -F _jobset_complete jobset"


def test_subcommands_flags_and_values(tmp_path: Path) -> None:
    assert _complete(["jobset", "de"], tmp_path) == ["dev", "describe", "delete"]
    assert "completion" in _complete(["jobset", ""], tmp_path)
    assert _complete(["jobset", "get", "--no-h"], tmp_path) == ["--no-headers"]
    assert _complete(["jobset", "get", "-o", ""], tmp_path) == [
        "json",
        "yaml",
        "name",
        "wide",
        "jsonpath=",
    ]
    assert _complete(["jobset", "delete", "--ign"], tmp_path) == ["--ignore-not-found"]
    assert _complete(["jobset", "sim", "--sim-level", "p"], tmp_path) == ["pods"]
    assert _complete(["jobset", "completion", "z"], tmp_path) == []  # positional choices: none


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells(shell: str) -> None:
    text = script(build_parser(), shell, "jobset")
    assert "describe" in text and "--no-headers" in text.replace("-l no-headers", "--no-headers")
