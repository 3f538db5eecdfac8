"""An environment's state in a checkpoint: bounded in size, signed, restored only when this user wrote it.

Used by the sync pipeline (the training environment, with its carry) and by
the run's checkpoints (the evaluation environment). Each rule keeps a run
whole when it cannot continue its episodes: the state is simply left out
(or not restored), and the resumed run starts new episodes, as it does for an
environment that cannot save its state at all.

* A state above ``train.max_env_state_bytes`` is left out of checkpoints,
  with one warning per environment: checkpoints stay small, and saving never
  holds several copies of a huge state at once.
* Every saved state is signed (:mod:`rlengine.collect.state_signing`); a
  state whose signature is missing or wrong is never handed to
  ``restore_state()``, which for a pickle could run code.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import weakref
from typing import Any, Iterator

from rlengine.collect import state_signing
from rlengine.collect.state_signing import StateKeyError
from rlengine.errors import format_bytes

LIMIT_KEY = "train.max_env_state_bytes"

_oversized_warned: "weakref.WeakSet[Any]" = weakref.WeakSet()  # environments already warned about
_key_problems_said: set = set()  # each problem with a key file is said once
_source: contextvars.ContextVar = contextvars.ContextVar("rlengine_state_source", default=None)


def _warn(message: str) -> None:
    print(f"rlengine: warning: {message}", file=sys.stderr)


def _name(env: Any) -> str:
    return getattr(env, "name", "") or f"environment {getattr(env, 'env_id', type(env).__name__)!r}"


# -- saving -----------------------------------------------------------------------------------
def bounded_state(env: Any, limit: int) -> bytes:
    """``env.state()``, or ``b""`` when the env cannot save it or it is above ``limit`` bytes (0: no limit)."""
    try:
        state = env.state()
    except NotImplementedError:  # not supported: a resumed run starts new episodes
        return b""
    if limit and len(state) > limit:
        if env not in _oversized_warned:
            _oversized_warned.add(env)
            _warn(f"the state of {_name(env)} is {format_bytes(len(state))}, above {LIMIT_KEY} = "
                  f"{format_bytes(limit)}: it is left out of checkpoints, so its episodes restart on resume "
                  f"(raise {LIMIT_KEY} to keep them)")
        return b""
    return state


def signed(payload: bytes) -> bytes:
    """``payload`` signed by this user; ``b""`` (episodes restart on resume) when there is no usable key."""
    if not payload:
        return b""
    try:
        return state_signing.sign(payload)
    except StateKeyError as exc:
        if str(exc) not in _key_problems_said:
            _key_problems_said.add(str(exc))
            _warn(f"{exc}; meanwhile checkpoints hold no environment state (episodes restart on resume)")
        return b""


def saved_state(env: Any, limit: int) -> bytes:
    """What a checkpoint stores for ``env``: its bounded state, signed (``b""``: none)."""
    return signed(bounded_state(env, limit))


# -- restoring ----------------------------------------------------------------------------------
@contextlib.contextmanager
def reading_from(source: str) -> Iterator[None]:
    """Name ``source`` (a checkpoint path) in the warnings of the restores inside; one warning in all."""
    token = _source.set({"path": source, "warned": False})
    try:
        yield
    finally:
        _source.reset(token)


def trusted(blob: bytes) -> bytes:
    """The payload of ``blob`` when this user signed it, else ``b""`` with one warning line saying why."""
    if not blob:
        return b""
    try:
        payload, reason = state_signing.verified(blob)
    except StateKeyError as exc:
        payload, reason = None, f"{exc}"
    else:
        reason = f"it was not written by this user ({reason})"
    if payload is None:
        refuse(reason)
        return b""
    return payload


def refuse(reason: str) -> None:
    """Say once per checkpoint read (see :func:`reading_from`) why its environment state stays unused."""
    source = _source.get()
    if source is not None:
        if source["warned"]:
            return
        source["warned"] = True
    where = source["path"] if source is not None else "a checkpoint"
    _warn(f"not restoring environment state of {where}: {reason}; episodes restart")


def restore_state(env: Any, blob: bytes) -> bool:
    """Put ``env`` back in the state :func:`saved_state` wrote; False when there is none, it is not
    trusted, or the env cannot restore it."""
    return apply_trusted_state(env, trusted(blob))


def apply_trusted_state(env: Any, state: bytes) -> bool:
    """``env.restore_state(state)`` for a state already verified by :func:`trusted`; False when empty or
    not supported."""
    if not state:
        return False
    try:
        env.restore_state(state)
    except NotImplementedError:
        return False
    return True
