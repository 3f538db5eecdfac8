"""The ``console`` writer: training progress on stderr.

On a terminal it draws a tqdm progress bar over env steps (steps/s, ETA,
latest episode return and evaluation return). When stderr is a file or a
pipe (batch jobs, CI) a bar would fill the log with carriage returns, so it
prints plain lines instead, at most one every ``print_interval_secs``;
rows with evaluation results are always printed. Both show the critic's
explained variance too when the algorithm reports it (PPO and A2C do).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Mapping, Optional

import attrs
from tqdm import tqdm

from rlengine import SummaryWriter
from rlengine_writers.values import to_number

MODES = ("auto", "bar", "lines")
EXPLAINED_VARIANCE = "diagnostics/explained_variance"  # how well the critic predicts the returns (1 is best)


def _non_negative_number(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{attribute.name} must be a number >= 0, got {value!r}")


@attrs.define
class ConsoleConfig:
    """Options of the ``console`` writer (TOML section ``[console]``)."""

    # Least time, in seconds, between two lines in "lines" mode (0 prints every row).
    print_interval_secs: float = attrs.field(default=5.0, validator=_non_negative_number)
    # "bar": progress bar; "lines": log lines; "auto": bar when stderr is a terminal, else lines.
    mode: str = attrs.field(default="auto", validator=attrs.validators.in_(MODES))


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # replaced, closed or detached streams
        return False


def _fmt(value: float) -> str:
    return f"{value:.5g}"


class ConsoleWriter(SummaryWriter):
    """Shows progress as a bar on terminals and as throttled lines elsewhere."""

    config_class = ConsoleConfig

    def __init__(self, root_dir: str, config: ConsoleConfig, total_env_steps: int = 0):
        super().__init__(root_dir, config, total_env_steps)
        mode = config.mode
        if mode == "auto":
            mode = "bar" if _is_tty(sys.stderr) else "lines"
        self.mode = mode
        self._closed = False
        # Latest values, kept between the rows that carry them.
        self._return: Optional[float] = None
        self._eval: Optional[str] = None
        self._explained: Optional[float] = None
        # Bar mode: created on the first row (see _update_bar).
        self._bar: Optional[tqdm] = None
        # Lines mode: (monotonic time, env_steps) of the last line, the speed
        # measured between lines, and the newest row not printed yet.
        self._last_line: Optional[tuple[float, int]] = None
        self._rate: Optional[float] = None
        self._pending: Optional[Mapping[str, Any]] = None

    # -- SummaryWriter ------------------------------------------------------
    def write(self, metrics: Mapping[str, Any]) -> None:
        if self._closed:
            raise ValueError("write() on a closed console writer")
        has_eval = self._remember(metrics)
        if self.mode == "bar":
            self._update_bar(metrics, has_eval)
        else:
            self._maybe_print(metrics, has_eval)

    def flush(self) -> None:
        if self._bar is not None:
            self._bar.refresh()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._pending is not None:
            # Show where the run ended even when the last rows were throttled.
            self._print_line(self._pending, time.monotonic())

    # -- shared -------------------------------------------------------------
    def _remember(self, metrics: Mapping[str, Any]) -> bool:
        """Keep the latest episode and evaluation returns; True if this row has eval results."""
        episode_return = to_number(metrics.get("train/episode_return"))
        if episode_return is not None:
            self._return = episode_return
        explained = to_number(metrics.get(EXPLAINED_VARIANCE))
        if explained is not None and math.isfinite(explained):  # NaN: the returns did not vary, nothing to show
            self._explained = explained
        if not any(key.startswith("eval/") for key in metrics):
            return False
        average = to_number(metrics.get("eval/average_return"))
        std = to_number(metrics.get("eval/std_return"))
        if average is not None:
            self._eval = _fmt(average) + (f" (std {_fmt(std)})" if std is not None else "")
        return True

    # -- bar mode -----------------------------------------------------------
    def _update_bar(self, metrics: Mapping[str, Any], has_eval: bool) -> None:
        steps = int(to_number(metrics.get("env_steps")) or 0)
        if self._bar is None:
            # Starting at the first row's count keeps a resumed run's earlier
            # steps out of the speed and ETA.
            self._bar = tqdm(
                total=self.total_env_steps or None,
                initial=steps,
                unit="step",
                # "12.3k/100k" reads well; small budgets would show "8.00/64.0".
                unit_scale=not 0 < self.total_env_steps < 10_000,
                dynamic_ncols=True,
                file=sys.stderr,
                desc="train",
            )
        postfix = [f"return={_fmt(self._return)}"] if self._return is not None else []
        if self._explained is not None:
            postfix.append(f"expl_var={self._explained:.2f}")
        if self._eval is not None:
            postfix.append(f"eval={self._eval}")
        self._bar.set_postfix_str(", ".join(postfix), refresh=False)
        self._bar.update(max(steps - self._bar.n, 0))
        if has_eval:
            # tqdm throttles redraws; an evaluation result is worth one now.
            self._bar.refresh()

    # -- lines mode ---------------------------------------------------------
    def _maybe_print(self, metrics: Mapping[str, Any], has_eval: bool) -> None:
        now = time.monotonic()
        due = self._last_line is None or now - self._last_line[0] >= self.config.print_interval_secs
        if due or has_eval:
            self._print_line(metrics, now, has_eval)
        else:
            self._pending = dict(metrics)  # the caller may reuse its dict

    def _print_line(self, metrics: Mapping[str, Any], now: float, has_eval: bool = False) -> None:
        steps = int(to_number(metrics.get("env_steps")) or 0)
        if self._last_line is not None and steps > self._last_line[1] and now > self._last_line[0]:
            self._rate = (steps - self._last_line[1]) / (now - self._last_line[0])
        self._last_line = (now, steps)
        self._pending = None
        print(self._line(metrics, steps, has_eval), file=sys.stderr, flush=True)

    def _line(self, metrics: Mapping[str, Any], steps: int, has_eval: bool) -> str:
        total = self.total_env_steps
        parts = [f"iter {metrics.get('iteration', '?')}"]
        parts.append(f"steps {steps}/{total} ({100.0 * steps / total:.1f}%)" if total else f"steps {steps}")
        if has_eval:
            # Evaluation rows usually follow a training row at the same step:
            # show only what is new.
            return " | ".join([*parts, f"eval {self._eval or '?'}"])
        if self._rate:
            parts.append(f"{tqdm.format_sizeof(self._rate)} steps/s")
            if total:
                parts.append(f"ETA {tqdm.format_interval(max(total - steps, 0) / self._rate)}")
        if self._return is not None:
            parts.append(f"return {_fmt(self._return)}")
        if self._explained is not None:
            parts.append(f"expl var {self._explained:.2f}")
        return " | ".join(parts)
