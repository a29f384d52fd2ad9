"""`--metrics-secure`: on by default for `jobset controller` (upstream's default), off only
when asked, in Go's spellings too; `jobset dev` keeps its loopback metrics plain unless
asked; bad values are refused naming the flag."""

from __future__ import annotations

import pytest

from jobset.cli import build_parser
from jobset.runtime.options import ManagerOptions
from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL


def _controller(*args: str) -> ManagerOptions:
    return ManagerOptions.from_args(build_parser().parse_args(["controller", *args]))


def test_controller_metrics_are_secure_by_default() -> None:
    assert _controller().metrics_secure is True
    assert _controller("--metrics-secure").metrics_secure is True
    assert _controller("--metrics-secure=true").metrics_secure is True
    # With no metrics server there is nothing to secure, and that is no error.
    assert _controller("--metrics-port", "-1").metrics_port is None


@pytest.mark.parametrize("off", ["--metrics-secure=false", "--metrics-secure=0",
                                 "--metrics-secure=False", "--no-metrics-secure"])  # fmt: skip
def test_plain_metrics_are_an_explicit_opt_in(off: str) -> None:
    assert _controller(off).metrics_secure is False
    # The last flag wins, as with Go's flag package: an appended opt-out turns it off.
    assert _controller("--metrics-secure", off).metrics_secure is False


def test_bad_values_and_contradictions_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["controller", "--metrics-secure=maybe"])
    err = capsys.readouterr().err
    assert "--metrics-secure" in err and "expected true or false, got 'maybe'" in err
    with pytest.raises(ValueError, match="--metrics-cert-dir is only used with --metrics-secure"):
        _controller("--metrics-secure=false", "--metrics-cert-dir", "/x")
    with pytest.raises(ValueError, match="--metrics-cert-dir needs a metrics server"):
        _controller("--metrics-port", "-1", "--metrics-cert-dir", "/x")


def test_dev_metrics_stay_plain_unless_asked() -> None:
    dev = ["dev", "--kubeconfig", "k"]
    assert build_parser().parse_args(dev).metrics_secure is False
    assert build_parser().parse_args([*dev, "--metrics-secure"]).metrics_secure is True


def test_the_controller_command_shortens_the_switch_interval_a_bare_manager_does_not() -> None:
    # Its process is its own: the planning threads give the loop the interpreter back every
    # 0.5 ms (kubeutil.gilswitch); a manager inside another's process leaves it alone.
    assert _controller().switch_interval == LOOP_SWITCH_INTERVAL
    assert ManagerOptions().switch_interval is None
