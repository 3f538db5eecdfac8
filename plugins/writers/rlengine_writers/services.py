"""The trackers that talk to a server: checked when the run is built, and bounded in time afterwards.

A tracker's calls run on its sender thread, long after the run started; a
server that is down, or that accepts connections and never answers, would
otherwise be found only then (MLflow retries an unanswered request for
minutes), or once the whole budget has trained. So each tracker writer
checks, when it is made (the run is being built: nothing trained, the run
directory as it was):

* **the address**: MLflow's tracking URI has a scheme MLflow has a store for
  (its own, or one a plugin registers under the entry point group
  ``mlflow.tracking_store``);
* **the server**: an ``http(s)`` MLflow server, or W&B's online one
  (``WANDB_BASE_URL``), answers an HTTP request within
  :data:`START_CHECK_SECS`; any answer counts, but 401 and 403 mean the
  credentials are refused;
* **the credentials**, where it is cheap: W&B online needs an API key
  (``WANDB_API_KEY``, or the login ``wandb login`` keeps in ``~/.netrc``).

Each failure is one line naming the tracker, the address and the key that
set it. Afterwards the trackers' own calls are bounded through their
environment variables (:data:`MLFLOW_HTTP_BOUNDS`, :data:`WANDB_BOUNDS`), set
for this process unless the user set them.
"""

from __future__ import annotations

import base64
import importlib.metadata
import netrc
import os
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Optional

from rlengine_writers.tracking import TrackerError

START_CHECK_SECS = 5.0  # a server that takes longer to answer one request is taken as not answering

#: MLflow's HTTP requests: a 10 s timeout, 2 retries, backoff factor 1 (MLflow's own: 120 s, 7, 2; what
#: each bounds a call to: docs/trackers.md).
MLFLOW_HTTP_BOUNDS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "10", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                      "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
#: wandb.init waits this long for its server (W&B's default: 90 s).
WANDB_BOUNDS = {"WANDB_INIT_TIMEOUT": "30"}

#: The schemes of MLflow's own tracking stores (mlflow.tracking._tracking_service.utils); a path without one
#: is a local store. The SQL ones also match with a driver ("postgresql+psycopg2").
MLFLOW_SCHEMES = ("http", "https", "sqlite", "postgresql", "mysql", "mssql", "file", "databricks", "databricks-uc",
                  "uc")
_SQL_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
WANDB_SERVER = "https://api.wandb.ai"


def bound(variables: dict) -> None:
    """Set each environment variable of ``variables`` for this process, unless the user set it."""
    for name, value in variables.items():
        os.environ.setdefault(name, value)


# -- MLflow -----------------------------------------------------------------------------------
def check_mlflow_uri(configured: str) -> None:
    """Refuse a tracking URI MLflow has no store for, or an http(s) server that does not answer; one line."""
    uri = configured or os.environ.get("MLFLOW_TRACKING_URI", "")
    key = "mlflow.tracking_uri" if configured else "MLFLOW_TRACKING_URI"
    scheme = urllib.parse.urlparse(uri).scheme.lower()
    if not _known_scheme(scheme):
        accepted = ", ".join(sorted({*MLFLOW_SCHEMES, *_plugin_schemes()}))
        raise TrackerError(f"the mlflow writer cannot log to {key} = {uri!r}: MLflow has no store for the scheme "
                           f"{scheme!r} (it takes {accepted}, or a local path): fix {key}")
    if scheme in ("http", "https"):
        bound(MLFLOW_HTTP_BOUNDS)
        url = uri.rstrip("/") + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=Default"
        problem = _unanswered(url, _mlflow_headers(), insecure=bool(os.environ.get("MLFLOW_TRACKING_INSECURE_TLS")))
        if problem:
            fix = ("set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN"
                   if problem.startswith("it refuses") else f"start the server, or fix {key}")
            raise TrackerError(f"the mlflow writer cannot reach {uri} ({key}): {problem}: {fix}; "
                               f"nothing was trained")


def _known_scheme(scheme: str) -> bool:
    if not scheme or len(scheme) == 1:  # a path; "C:" of a Windows one
        return True
    return scheme in MLFLOW_SCHEMES or scheme.startswith(_SQL_SCHEMES) or scheme in _plugin_schemes()


def _plugin_schemes() -> set:
    return {entry.name for entry in importlib.metadata.entry_points(group="mlflow.tracking_store")}


def _mlflow_headers() -> dict:
    """The credentials MLflow sends (its environment variables), so a server that needs them answers."""
    token, user = os.environ.get("MLFLOW_TRACKING_TOKEN"), os.environ.get("MLFLOW_TRACKING_USERNAME")
    if token:
        return {"Authorization": f"Bearer {token}"}
    if user:
        pair = f"{user}:{os.environ.get('MLFLOW_TRACKING_PASSWORD', '')}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    return {}


# -- W&B ----------------------------------------------------------------------------------------
def wandb_server(mode: str) -> Optional[str]:
    """The W&B server a run of ``wandb.mode`` = ``mode`` logs to; None offline or disabled."""
    mode = os.environ.get("WANDB_MODE", "online") if mode == "auto" else mode
    return os.environ.get("WANDB_BASE_URL", WANDB_SERVER) if mode in ("online", "run") else None


def check_wandb_online(mode: str) -> None:
    """For W&B online: an API key, and its server answering; one line otherwise. Offline and disabled: nothing."""
    server = wandb_server(mode)
    if server is None:
        return
    bound(WANDB_BOUNDS)
    host = urllib.parse.urlparse(server).hostname or server
    if not (os.environ.get("WANDB_API_KEY") or _netrc_login(host)):
        raise TrackerError(f"the wandb writer logs online to {server} but has no API key for {host}: run "
                           "'wandb login', set WANDB_API_KEY, or set wandb.mode = \"offline\"")
    problem = _unanswered(server)
    if problem:
        raise TrackerError(f"the wandb writer cannot reach {server} (WANDB_BASE_URL): {problem}: check the "
                           "network, or set wandb.mode = \"offline\" (then 'wandb sync'); nothing was trained")


def _netrc_login(host: str) -> bool:
    try:  # where W&B looks: NETRC, else ~/.netrc
        return netrc.netrc(os.environ.get("NETRC") or None).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):  # no ~/.netrc, or one that cannot be read
        return False


# -- one bounded request ------------------------------------------------------------------------
def _unanswered(url: str, headers: Optional[dict] = None, insecure: bool = False) -> str:
    """Why the server at ``url`` gave no HTTP answer within :data:`START_CHECK_SECS`; "" when it answered."""
    context = ssl._create_unverified_context() if insecure else None  # noqa: S323 - the user asked for it
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=START_CHECK_SECS, context=context):  # noqa: S310 - http(s)
            return ""
    except urllib.error.HTTPError as exc:  # it answered
        return f"it refuses the credentials (HTTP {exc.code})" if exc.code in (401, 403) else ""
    except (urllib.error.URLError, OSError) as exc:
        return _reason(getattr(exc, "reason", exc))


def _reason(reason: object) -> str:
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"it did not answer within {START_CHECK_SECS:g} s"
    if isinstance(reason, ConnectionRefusedError):
        return "nothing listens there (connection refused)"
    if isinstance(reason, socket.gaierror):
        return "its host name is not known"
    return str(getattr(reason, "strerror", None) or reason)
