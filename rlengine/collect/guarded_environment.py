"""The environment wrapper that restarts a crashed environment, stops on a hung one and refuses broken output.

:class:`GuardedEnvironment` wraps the batched environment a factory makes.
When its ``step`` or ``reset`` raises, it closes the broken environment,
makes a new one (same env ids, a fresh seed), resets it and returns those
``FIRST`` steps in place of the failed step, so the run goes on. After
``max_restarts`` restarts the next error stops the run with one line naming
the environment. A call that does not answer within ``step_timeout``
seconds stops the run (no restart: a hung environment may hold resources).
Every time step is checked against the spec (and for non-finite values).

What a collector does around one is in :mod:`rlengine.collect.faults`, which
also exports these names (their first home).
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable, Optional

from rlengine.api import Environment
from rlengine.api.data import TimeStep
from rlengine.collect import stopping
from rlengine.collect.env_checks import TimeStepCheck, environment_origin
from rlengine.errors import (
    EnvironmentFault,
    EnvironmentOutputMismatch,
    EnvironmentTimeout,
    RLEngineError,
    telling_line,
)

#: Seed added per restart: the new copies do not replay the episodes of the old ones,
#: and stay clear of other copies' seeds (``seed + env_id``) and of evaluation seeds.
RESTART_SEED_STRIDE = 104_729
#: How long ``close`` waits for a step still running on another thread before closing anyway.
CLOSE_WAIT_SECONDS = 5.0
#: Words of an error about arrays of the wrong shape or dtype (NumPy's, Gymnasium's vector envs', TensorFlow's).
SHAPE_OR_DTYPE = re.compile(r"shape|dtype|broadcast|dimension", re.IGNORECASE)


class GuardedEnvironment(Environment):
    """An environment that survives crashes of the one ``factory(seed)`` makes.

    ``restarts`` counts recreations (read it around an unroll: a change means
    drop the unroll); ``failure`` holds the error that stopped it, if any.
    ``busy_since`` is the ``perf_counter()`` time the call in progress began
    (``None`` when idle), so a watcher on another thread can call
    :meth:`check_responsive`. An inner environment that enforces the timeout
    itself sets ``handles_step_timeout = True`` and reads ``step_timeout``
    (raising ``TimeoutError``); then no watcher is needed.
    """

    #: every time step is checked against the spec, so EnvCaller need not; it takes the checked leaves from
    #: ``step_leaves``/``reset_leaves``, which an environment that says this must have
    checks_outputs = True

    def __init__(self, factory: Callable[[int], Environment], name: str, seed: int, *,
                 max_restarts: int = 10, step_timeout: float = 60.0, check_finite: bool = True,
                 restarts_key: Optional[str] = "train.max_env_restarts"):
        self._factory = factory
        self._env: Any = None  # the inner environment, replaced on each restart
        self.name = name
        self.max_restarts = max_restarts
        self.restarts_key = restarts_key  # the setting to name when restarts run out (None: not configurable)
        self.step_timeout = step_timeout
        self.check_finite = check_finite
        self.restarts = 0
        self.failure: Optional[EnvironmentFault] = None
        self.busy_since: Optional[float] = None
        self._busy_with = ""  # "step" or "reset": what busy_since times
        self._answered = False  # whether any call ever returned a good time step (else a fault is not transient)
        self._restarted_for: Optional[tuple] = None  # (type, line) of the error that caused the last restart
        inner = self._make_first(seed)
        super().__init__(inner.env_id, inner.num_envs, seed, inner.first_env_id, inner.config)
        self._spec = inner.time_step_spec()
        self._check = TimeStepCheck(self._spec, self.num_envs, name, self.copies, self.first_env_id,
                                    origin=lambda: environment_origin(type(inner)))

    # -- the Environment interface ---------------------------------------------------------------
    def time_step_spec(self) -> TimeStep:
        return self._spec

    def action_spec(self) -> Any:
        return self._env.action_spec()

    def reset(self) -> TimeStep:
        return self._guarded("reset", self._env.reset)[0]

    def step(self, action: Any) -> TimeStep:
        return self._guarded("step", self._env.step, action)[0]

    # the same, as the flat leaves the check made (tf.nest.flatten order): EnvCaller takes these, not flattening
    # each time step a second time (evaluation 4% faster: benchmarks/eval_speed.py)
    def reset_leaves(self) -> list:
        return self._guarded("reset", self._env.reset)[1]

    def step_leaves(self, action: Any) -> list:
        return self._guarded("step", self._env.step, action)[1]

    def render(self) -> Any:
        return self._env.render()

    def stacked_frames(self) -> Any:  # declared by the base class, so __getattr__ would never forward it
        return self._env.stacked_frames()

    def state(self) -> bytes:
        if self.failure is not None or self.busy_since is not None:  # broken, hung or busy: it cannot say where
            raise NotImplementedError  # it stands, so a checkpoint holds none and its episodes restart on resume
        return self._env.state()

    def restore_state(self, state: bytes) -> None:
        self._env.restore_state(state)

    def close(self) -> None:
        """Close the inner environment once no call is inside it; never one that hung in process.

        Another thread may still be finishing a step (a pipeline being torn
        down): that gets up to ``CLOSE_WAIT_SECONDS`` to return first.
        """
        deadline = time.perf_counter() + CLOSE_WAIT_SECONDS
        while self.busy_since is not None and self.failure is None and time.perf_counter() < deadline:
            time.sleep(0.005)
        hung = self.busy_since is not None and isinstance(self.failure, EnvironmentTimeout)
        if self._env is not None and not hung:  # closing under a hung call could hang this thread too
            env, self._env = self._env, None
            env.close()

    def __getattr__(self, name: str) -> Any:  # plugin extras (e.g. observation_space) stay reachable
        env = self.__dict__.get("_env")
        if env is None:
            raise AttributeError(name)
        return getattr(env, name)

    # -- watching ---------------------------------------------------------------------------------
    @property
    def copies(self) -> str:
        return f"copies {self.first_env_id}..{self.first_env_id + self.num_envs - 1}"

    @property
    def needs_watcher(self) -> bool:
        """Whether a timeout must be enforced from outside (an in-process environment)."""
        return self.step_timeout > 0 and not getattr(self._env, "handles_step_timeout", False)

    def check_responsive(self) -> None:
        """Raise (and record) a timeout if the call in progress has run longer than ``step_timeout``."""
        started = self.busy_since
        if self.failure is None and started is not None and self.step_timeout > 0:
            if time.perf_counter() - started > self.step_timeout:
                self._fail(self._timeout_error(f"{self._busy_with}()"))
            elif stopping.holds_up_stop(started):  # the run was asked to stop: wait for this call no longer
                self._fail(EnvironmentTimeout(f"{self.name} ({self.copies}) was still in {self._busy_with}() "
                                              f"{stopping.GRACE_SECONDS:g} s after the run was asked to stop"))
        if self.failure is not None:
            raise self.failure

    # -- internals --------------------------------------------------------------------------------
    def _make_first(self, seed: int) -> Environment:
        """The first environment; one that cannot be made is not retried (nothing transient about it)."""
        try:
            return self._make(seed)
        except RLEngineError:
            raise
        except Exception as exc:
            raise EnvironmentFault(f"{self.name} could not be made: {type(exc).__name__}: {telling_line(str(exc))}; "
                                   "fix the environment or its config section; --debug shows the traceback") from exc

    def _make(self, seed: int) -> Environment:
        env: Any = self._factory(seed)
        if getattr(env, "handles_step_timeout", False):
            env.step_timeout = self.step_timeout
        self._env = env
        return env

    def _guarded(self, what: str, call: Callable, *args: Any) -> tuple[TimeStep, list]:
        if self.failure is not None:
            raise self.failure
        self._busy_with, self.busy_since = what, time.perf_counter()
        try:
            time_step = call(*args)
        except TimeoutError as exc:
            self._fail(self._timeout_error(f"{what}()"), exc)
        except Exception as exc:
            if not self._answered:  # it never worked: a restart runs the same failing code again
                self._fail(self._never_worked_error(what, exc), exc)
            if _fault_key(exc) == self._restarted_for and SHAPE_OR_DTYPE.search(str(exc)):
                self._fail(self._broken_contract_error(what, exc), exc)
            time_step = self._restart(what, exc)  # a crash of an environment that worked: recreate it
        finally:
            self.busy_since = None
        if self.failure is not None:  # it answered after it was given up (timed out, abandoned): too late
            raise self.failure
        leaves = self._check_output(time_step, what)
        self._answered = True
        return time_step, leaves

    def _check_output(self, time_step: TimeStep, what: str) -> list:
        """The flat leaves of ``time_step``; wrong arrays and non-finite values stop the run: the same code would
        return them again."""
        try:
            leaves = self._check.check_spec(time_step, what)
            if self.check_finite:
                self._check.check_finite(leaves, what)
        except EnvironmentFault as error:
            self.failure = error
            raise
        return leaves

    def _restart(self, what: str, error: Exception) -> TimeStep:
        """Recreate and reset the environment until it works or the restarts run out."""
        while True:
            if self.restarts >= self.max_restarts:
                self._fail(self._exhausted_error(what, error), error)
            self._close_broken()
            self.restarts += 1
            self._restarted_for = _fault_key(error)
            self._busy_with, self.busy_since = "reset", time.perf_counter()  # each attempt gets the whole timeout
            print(f"rlengine: warning: {self.name} ({self.copies}): {what}() raised {type(error).__name__}: "
                  f"{telling_line(str(error))}; recreated it (restart {self.restarts} of {self.max_restarts}, "
                  "the unroll in progress is dropped)", file=sys.stderr)
            try:
                return self._make(self.seed + self.restarts * RESTART_SEED_STRIDE).reset()
            except Exception as exc:  # the new one failed too: counts as another restart
                what, error = "reset", exc

    def _close_broken(self) -> None:
        env, self._env = self._env, None
        try:
            if env is not None:
                env.close()
        except Exception:  # a crashed environment may fail to close; its replacement matters more
            pass

    def _fail(self, error: EnvironmentFault, cause: Optional[BaseException] = None) -> None:
        """Record and raise ``error``; ``cause`` is the environment's own exception (the traceback
        ``--debug`` shows), given explicitly so the error does not read as a second failure."""
        self.failure = error
        raise error from cause

    def _never_worked_error(self, what: str, error: Exception) -> EnvironmentFault:
        return EnvironmentFault(
            f"{self.name} ({self.copies}): its first {what}() raised {type(error).__name__}: "
            f"{telling_line(str(error))}; it is not restarted, since an environment that never worked fails "
            "the same way after a restart; fix the environment (--debug shows the traceback)")

    def _broken_contract_error(self, what: str, error: Exception) -> EnvironmentOutputMismatch:
        return EnvironmentOutputMismatch(
            f"{self.name} ({self.copies}): {what}() raised {type(error).__name__}: {telling_line(str(error))} "
            "again after a restart: arrays of a wrong shape or dtype are the environment's contract broken, "
            f"which a restart does not repair; its time_step_spec() promises {self._check.observation_promise()} "
            f"(num_envs first); it is stopped; fix the environment{self._check.origin()} or its time_step_spec() "
            "(--debug shows the traceback)")

    def _exhausted_error(self, what: str, error: Exception) -> EnvironmentFault:
        raised = f"{what}() raised {type(error).__name__}: {telling_line(str(error))}"
        if self.restarts_key is None:
            return EnvironmentFault(f"{self.name} ({self.copies}): {raised}; it is not restarted; fix the environment")
        return EnvironmentFault(
            f"{self.name} ({self.copies}) failed after {self.restarts} restart(s) ({self.restarts_key} = "
            f"{self.max_restarts}): {raised}; fix the environment or raise {self.restarts_key}")

    def _timeout_error(self, what: str) -> EnvironmentTimeout:
        return EnvironmentTimeout(
            f"{self.name} ({self.copies}) did not answer {what} within {self.step_timeout:g} s "
            "(train.env_step_timeout); it is stopped, not restarted, since a hung environment may hold "
            "resources; fix the environment or raise train.env_step_timeout (0 disables)")


def _fault_key(error: Exception) -> tuple:
    """What makes two environment errors the same one: their type and line."""
    return type(error).__name__, telling_line(str(error))
