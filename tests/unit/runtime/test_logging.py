"""Logs carry what operators need and nothing a reader of the logs should not see; under
json every line is one JSON object, whoever wrote it (structlog, aiohttp, asyncio,
kubernetes_asyncio, `warnings`, an uncaught exception)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jobset.runtime.logging import configure_logging, get_logger, status_line
from tests.logs import json_records


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


@pytest.fixture
def json_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """JSON logging into a buffer (a real stream through the real handler); the records it
    holds so far, each line parsed on its own."""
    out = io.StringIO()
    configure_logging("json", "INFO", stream=out)
    try:
        yield lambda: json_records(out.getvalue())
    finally:
        configure_logging("console")


def test_library_records_are_json_lines_with_their_logger_and_level(
    json_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    get_logger("controller", controller="jobset").info("caches synced", informers=6)
    logging.getLogger("aiohttp.server").error("Error handling request from %s", "127.0.0.1")
    logging.getLogger("kubernetes_asyncio.config.kube_config").warning("Config not found: %s", "x")
    logging.getLogger("aiohttp.access").info("GET /metrics 200")  # libraries: WARNING and up
    get_logger("controller").debug("not at INFO")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("old flag", DeprecationWarning, stacklevel=1)
    own, aio, kube, warning = json_lines()
    assert own["event"] == "caches synced" and own["logger"] == "controller"
    assert own["level"] == "info" and own["informers"] == 6 and own["controller"] == "jobset"
    assert own["timestamp"].endswith("Z")
    assert aio == {**aio, "event": "Error handling request from 127.0.0.1", "level": "error"}
    assert aio["logger"] == "aiohttp.server" and aio["timestamp"].endswith("Z")
    assert kube["logger"] == "kubernetes_asyncio.config.kube_config"
    assert kube["level"] == "warning" and kube["event"] == "Config not found: x"
    assert warning["logger"] == "py.warnings" and "DeprecationWarning: old flag" in warning["event"]


def test_tracebacks_are_structured_fields(json_lines: Callable[[], list[dict[str, Any]]]) -> None:
    def fetch() -> None:
        raise ConnectionResetError("reset by peer")

    try:
        try:
            fetch()
        except ConnectionResetError as err:
            raise RuntimeError("create failed") from err
    except RuntimeError:
        get_logger("controller").exception("Reconciler error", key="ns/a")
    # asyncio's own default exception handler (what an unretrieved task error goes through).
    loop = asyncio.new_event_loop()
    try:
        loop.call_exception_handler({"message": "Task exception was never retrieved",
                                     "exception": ValueError("lost")})  # fmt: skip
    finally:
        loop.close()
    ours, aio = json_lines()
    assert ours["level"] == "error" and ours["key"] == "ns/a"
    outer, cause = ours["exception"]
    assert (outer["exc_type"], outer["exc_value"]) == ("RuntimeError", "create failed")
    assert (cause["exc_type"], cause["exc_value"]) == ("ConnectionResetError", "reset by peer")
    assert any(f["name"] == "fetch" and f["lineno"] > 0 for f in cause["frames"])
    assert all("locals" not in f for e in ours["exception"] for f in e["frames"])
    assert aio["logger"] == "asyncio" and aio["level"] == "error"
    assert aio["exception"][0]["exc_type"] == "ValueError"


def test_values_orjson_refuses_are_written_not_lost(
    json_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    get_logger("x").info("odd values", big=2**70, by_index={0: "a"}, obj=Opaque())
    (rec,) = json_lines()
    assert rec["big"] == str(2**70) and rec["by_index"] == {"0": "a"} and rec["obj"] == "<opaque>"


def test_an_uncaught_exception_in_a_thread_is_a_json_record(
    json_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    def crash() -> None:
        raise KeyError("gone")

    thread = threading.Thread(target=crash, name="worker-1")
    thread.start()
    thread.join()
    (rec,) = json_lines()
    assert rec["level"] == "critical" and rec["event"] == "uncaught exception in thread worker-1"
    assert rec["exception"][0]["exc_type"] == "KeyError"


def test_status_lines_are_json_under_json_and_text_otherwise() -> None:
    out = io.StringIO()
    status_line("json", "jobset dev ready: https://127.0.0.1:1", stream=out, url="u")
    status_line("console", "jobset dev stopped", stream=out)
    first, second = out.getvalue().splitlines()
    rec = json.loads(first)
    assert rec["event"] == "jobset dev ready: https://127.0.0.1:1" and rec["url"] == "u"
    assert rec["level"] == "info" and rec["timestamp"].endswith("Z")
    assert second == "jobset dev stopped"


def test_unknown_format_and_level_are_refused() -> None:
    with pytest.raises(ValueError, match="--log-format must be json or console"):
        configure_logging("xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"--log-level must be DEBUG, INFO, .* not 'loud'"):
        configure_logging("json", "loud")
