"""Signed state blobs: a checkpoint hands opaque state back to code only when this user wrote it.

An environment's state (``Environment.state()``) is opaque bytes, and the gym
plugin's is a pickle: restoring it runs whatever code the bytes name. A run
directory downloaded from elsewhere must therefore never reach
``restore_state()``. As Jupyter signs notebooks, every state blob a run
writes carries an HMAC-SHA256 under a per-user secret key, and a blob whose
signature is missing or wrong is not restored (its episodes restart).

The key is 32 random bytes, hex encoded, in ``$RLENGINE_STATE_KEY_FILE``, or
else ``$XDG_CONFIG_HOME/rlengine/state-key`` (``~/.config/rlengine/state-key``).
It is created on first use, readable by its owner only (mode 0600).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from typing import Optional

from rlengine.errors import StateKeyError
from rlengine.files import write_atomically

KEY_FILE_VARIABLE = "RLENGINE_STATE_KEY_FILE"
MAGIC = b"rlengine-signed-state-v1\n"  # marks a signed blob; then the digest, then the payload
_DIGEST_SIZE = hashlib.sha256().digest_size
_DOMAIN = b"rlengine state blob\0"  # what the key signs, so its MACs mean nothing elsewhere

#: Why a blob was not verified (the reason shown in the warning).
UNSIGNED = "unsigned"
FOREIGN = "signed with another key"


def key_path() -> str:
    """Where this user's state key lives (see the module docstring)."""
    explicit = os.environ.get(KEY_FILE_VARIABLE)
    if explicit:
        return os.path.expanduser(explicit)
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config_home, "rlengine", "state-key")


def _create_key(path: str) -> None:
    """Write a new key at ``path`` unless another process created one meanwhile (then that one is kept):
    nobody ever reads a half-written key."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    write_atomically(path, secrets.token_hex(32) + "\n", mode=0o600, replace=False)


def load_key() -> bytes:
    """This user's key, created on first use; a :class:`StateKeyError` names the file and the fix."""
    path = key_path()
    try:
        if not os.path.exists(path):
            _create_key(path)
        with open(path, "rb") as f:
            key = f.read().strip()
    except OSError as exc:
        raise StateKeyError(f"cannot read or create the state key {path}: {exc.strerror or exc}; set "
                            f"{KEY_FILE_VARIABLE} to a file this user may write") from exc
    if len(key) < 32:
        raise StateKeyError(f"the state key {path} is empty or too short; delete it (a new one is made) "
                            f"or set {KEY_FILE_VARIABLE} to another file")
    return key


def _digest(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, _DOMAIN + payload, hashlib.sha256).digest()


def sign(payload: bytes, key: Optional[bytes] = None) -> bytes:
    """``payload`` with this user's signature in front (what :func:`verified` accepts)."""
    return MAGIC + _digest(load_key() if key is None else key, payload) + payload


def verified(blob: bytes, key: Optional[bytes] = None) -> tuple:
    """``(payload, "")`` when this user signed ``blob``, else ``(None, reason)`` (``UNSIGNED`` or ``FOREIGN``)."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _DIGEST_SIZE:
        return None, UNSIGNED
    digest = blob[len(MAGIC):len(MAGIC) + _DIGEST_SIZE]
    payload = blob[len(MAGIC) + _DIGEST_SIZE:]
    if not hmac.compare_digest(digest, _digest(load_key() if key is None else key, payload)):
        return None, FOREIGN
    return payload, ""
