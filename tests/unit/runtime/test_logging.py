"""Logs carry what operators need and nothing a reader of the logs should not see."""

from __future__ import annotations

import io

import pytest

from jobset.runtime.logging import configure_logging, get_logger


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_tracebacks_do_not_print_local_variables(fmt: str) -> None:
    out = io.StringIO()
    configure_logging(fmt, stream=out)  # type: ignore[arg-type]
    try:

        def handle() -> None:
            body = '{"request": {"object": {"token": "s3cr3t-token-value"}}}'  # noqa: F841
            raise ValueError("bad review")

        try:
            handle()
        except ValueError:
            get_logger("test").exception("handler failed")
        text = out.getvalue()
        assert "handler failed" in text and "bad review" in text  # the traceback is there
        assert "s3cr3t-token-value" not in text  # its frames' locals are not
    finally:
        configure_logging("console")
