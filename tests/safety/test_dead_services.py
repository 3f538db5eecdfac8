"""Trackers whose server is dead (issue "Every mistake named", item 2): no hang, one line, the run dir intact.

A tracking URI MLflow has no store for, a port where nothing listens, a server
that accepts connections and never answers, W&B online without a key or a
server: each refuses the run when it is built, before any training, in one
line naming the tracker and the address. A server that dies during the run
costs at most the writer's ``close_secs`` when the run closes, and one line
says what was dropped. Needs the writers plugin and MLflow (skipped without).
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from rlengine.errors import RLEngineError
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config
from tests.safety.damage_kit import trained_toy_run

pytestmark = pytest.mark.first_party
pytest.importorskip("mlflow")

BOUNDED = ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # MLflow's default store, if anything makes one, stays out of the checkout
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    for name in ("MLFLOW_TRACKING_URI", *BOUNDED, "WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SilentServer:
    """Accepts connections and never answers, after answering the first ``answered`` requests (404)."""

    def __init__(self, answered: int = 0):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.uri = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.answered, self.held = answered, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed by the test
                return
            if self.answered > 0:
                self.answered -= 1
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                conn.close()
            else:
                self.held.append(conn)  # open, silent

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def _engine(root: Path, writer: str, section: dict, force: bool = False) -> Engine:
    raw = tiny_config(str(root), writers=["memory", writer], disabled_callbacks=["mlflow-policy"])
    raw[writer] = section
    return Engine(raw, extra_plugins=[("testing", testing_plugin())], force=force)


def _files(root: Path) -> dict:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(root: Path, writer: str, section: dict) -> str:
    """The one-line error of resuming the trained run ``root`` with ``writer``; its files must be unchanged."""
    before = _files(root)
    with pytest.raises(RLEngineError) as caught:
        _engine(root, writer, section, force=True).train()
    assert _files(root) == before  # checkpoints, config and metrics as they were
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_dead_port_refuses_the_run_at_start_naming_the_tracker_and_the_uri(tmp_path):
    uri = f"http://127.0.0.1:{_closed_port()}"
    message = _refused(trained_toy_run(tmp_path), "mlflow", {"tracking_uri": uri})
    assert message == (f"the mlflow writer cannot reach {uri} (mlflow.tracking_uri): nothing listens there "
                       "(connection refused): start the server, or fix mlflow.tracking_uri; nothing was trained")
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"  # MLflow's calls are bounded from now on


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_server_that_never_answers_refuses_the_run_at_start(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")  # the user's own bound is kept
    server = SilentServer()
    try:
        message = _refused(trained_toy_run(tmp_path), "mlflow", {"tracking_uri": server.uri})
    finally:
        server.close()
    assert message.startswith(f"the mlflow writer cannot reach {server.uri} (mlflow.tracking_uri): it did not "
                              "answer within 5 s: ")
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "3"


def test_an_unknown_scheme_is_one_line_naming_the_key_and_the_schemes_taken(tmp_path):
    root = tmp_path / "fresh"
    with pytest.raises(RLEngineError) as caught:
        _engine(root, "mlflow", {"tracking_uri": "nosuch://x"}).train()
    assert str(caught.value).startswith("the mlflow writer cannot log to mlflow.tracking_uri = 'nosuch://x': MLflow "
                                        "has no store for the scheme 'nosuch' (it takes databricks, ")
    assert "http, https, mssql" in str(caught.value) and not root.exists()  # refused before the run started


def test_the_schemes_checked_are_mlflows_own():
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry
    from rlengine_writers.services import MLFLOW_SCHEMES, _plugin_schemes

    assert set(_tracking_store_registry._registry) - {""} == {*MLFLOW_SCHEMES, *_plugin_schemes()}


def test_a_server_that_stops_answering_during_the_run_costs_close_secs_and_one_line(tmp_path, capsys):
    server = SilentServer(answered=1)  # the start-up check's request; then silence
    root = tmp_path / "run"
    try:
        result = _engine(root, "mlflow", {"tracking_uri": server.uri, "close_secs": 1.0, "flush_secs": 0.2}).train()
    finally:
        server.close()
    lines = [line for line in capsys.readouterr().err.splitlines() if "mlflow" in line]
    assert len(lines) == 1 and lines[0].startswith("rlengine: warning: mlflow: gave up after 1 s (mlflow.close_secs) "
                                                   "closing the writer: ")
    assert f"not sent to {server.uri}, and its mlflow run not ended" in lines[0]
    assert result.env_steps == 32 and (root / "checkpoints" / "ckpt-4.complete").is_file()


def test_wandb_online_without_a_key_or_a_server_is_one_line_at_start(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc login
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    server = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("WANDB_BASE_URL", server)
    root = trained_toy_run(tmp_path)

    assert _refused(root, "wandb", {"mode": "online"}) == (
        f"the wandb writer logs online to {server} but has no API key for 127.0.0.1: run 'wandb login', set "
        "WANDB_API_KEY, or set wandb.mode = \"offline\"")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert _refused(root, "wandb", {"mode": "online"}) == (
        f"the wandb writer cannot reach {server} (WANDB_BASE_URL): nothing listens there (connection refused): "
        "check the network, or set wandb.mode = \"offline\" (then 'wandb sync'); nothing was trained")


class AnsweringServer:
    """Answers every request with ``status`` and an empty body."""

    def __init__(self, status: int):
        import http.server

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):  # the test's output stays the engine's
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("status", [401, 403])
def test_a_server_that_refuses_the_credentials_refuses_the_run_at_start(tmp_path, status):
    server = AnsweringServer(status)
    try:
        message = _refused(trained_toy_run(tmp_path), "mlflow", {"tracking_uri": server.uri})
    finally:
        server.close()
    assert message.startswith(f"the mlflow writer cannot reach {server.uri} (mlflow.tracking_uri): it refuses the "
                              f"credentials (HTTP {status})")


def test_wandb_init_is_bounded_unless_the_user_bounded_it(monkeypatch):
    pytest.importorskip("wandb")
    from rlengine_writers.services import check_wandb_online

    server = AnsweringServer(200)
    monkeypatch.setenv("WANDB_BASE_URL", server.uri)
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.delenv("WANDB_INIT_TIMEOUT", raising=False)
    try:
        check_wandb_online("online")
        assert os.environ["WANDB_INIT_TIMEOUT"] == "30"  # W&B's own default: 90 s
        monkeypatch.setenv("WANDB_INIT_TIMEOUT", "7")
        check_wandb_online("online")
        assert os.environ["WANDB_INIT_TIMEOUT"] == "7"
    finally:
        server.close()
