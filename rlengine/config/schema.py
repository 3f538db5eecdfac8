"""What a run is configured with: the engine's ``[train]`` section plus one section per plugin.

Each plugin class declares an attrs ``config_class``; its section is the
name it was registered under. :mod:`rlengine.config.loading` builds these
from TOML and overrides.
"""

from __future__ import annotations

import os
import time
from typing import Any, Iterable, Mapping, Optional, Union

import attrs

_positive = attrs.validators.gt(0)
_non_negative = attrs.validators.ge(0)
#: NumPy's global seed takes 0 .. 2**32 - 1; a bigger train.seed is refused here, not by NumPy mid-start-up
_seed_range = attrs.validators.and_(_non_negative, attrs.validators.le(2**32 - 1))


def _auto_or_non_negative(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value != "auto" and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        raise ValueError(f"'{attribute.name}' must be \"auto\" or a number of threads >= 0 (0: TensorFlow's "
                         f"choice), got {value!r}")


@attrs.define(kw_only=True)
class TrainConfig:
    """The engine's own settings (TOML section ``[train]``)."""

    algorithm: str = "ppo"  # registered algorithm name
    env: str = "CartPole-v1"  # registered environment name, or an id for env_provider
    env_provider: str = "gym"  # environment class that takes ids not registered by name
    num_envs: int = attrs.field(default=8, validator=_positive)  # copies stepped as one batch
    num_env_steps: int = attrs.field(default=200_000, validator=_positive)  # budget (all copies)
    unroll_length: int = attrs.field(default=32, validator=_positive)  # steps per copy per iteration
    #: seeds Python, NumPy, TensorFlow and the run's generator; training env copy i gets seed + i
    seed: int = attrs.field(default=0, validator=_seed_range)
    transformers: list = attrs.field(factory=list)  # observation transformers, applied in order
    writers: list = attrs.field(factory=lambda: ["console", "tensorboard", "jsonl"])  # summary writers, by name
    disabled_callbacks: list = attrs.field(factory=list)  # callbacks (see rlengine plugins) left out, by name
    summary_interval: int = attrs.field(default=1, validator=_positive)  # iterations between summaries
    eval_interval: int = attrs.field(default=10, validator=_non_negative)  # iterations; 0: never
    #: greedy episodes per evaluation, spread over up to 32 env copies seeded apart from the training ones
    num_eval_episodes: int = attrs.field(default=10, validator=_positive)
    target_return: Optional[float] = None  # stop once evaluation reaches it
    # iterations between checkpoints, besides those by train.checkpoint_seconds; 0: by time (and at the end) only
    checkpoint_interval: int = attrs.field(default=0, validator=_non_negative)
    # wall-clock seconds between checkpoints; the first comes 1 s after the first iteration, the gaps double up to
    # this and stay above 20x a checkpoint's write time; every stop also checkpoints; 0: by iterations only
    checkpoint_seconds: float = attrs.field(default=300.0, validator=attrs.validators.ge(0.0))
    keep_checkpoints: int = attrs.field(default=3, validator=_positive)  # newest complete checkpoints kept on disk
    checkpoint_replay: bool = True  # checkpoints hold the replay buffer, so a resumed run keeps its experience
    # bytes of an environment's saved state a checkpoint may hold; a larger one is left out (one warning) and
    # its episodes restart on resume; 0: no limit
    max_env_state_bytes: int = attrs.field(default=64 * 2**20, validator=_non_negative)
    deterministic: bool = False  # op determinism: resumed runs end with the same weights as uninterrupted ones
    root_dir: str = ""  # empty: runs/<algorithm>-<env>-<time> (the dataset in place of the env with train.dataset)
    eager: bool = False  # run every tf.function eagerly (debugging)
    replay_on_policy: bool = False  # on-policy algorithms: route each unroll through a replay buffer
    pipeline: str = "sync"  # registered pipeline that moves data from environments to the learner ("async": threads)
    # a Minari dataset id or path to learn from with no environment stepping (the offline plugin's pipeline reads
    # it, and the run's environment only evaluates); empty: learn by stepping train.env
    dataset: str = ""
    # a run directory whose checkpoint (train.init_checkpoint) starts this run's weights, optimizer and
    # statistics, its counters and replay starting afresh (fine-tuning; with train.dataset an off-policy run's
    # replay starts with the dataset: offline to online); a run that has checkpoints of its own resumes them instead
    init_from: str = ""
    init_checkpoint: str = "latest"  # the checkpoint of train.init_from: "latest", "best" or an iteration number
    # NaN guard: stop the run after this many updates in a row skipped for a non-finite loss or gradient
    max_nonfinite_updates: int = attrs.field(default=100, validator=_positive)
    # Environment faults: a training env whose step or reset raises is recreated (new seed, same env ids)
    # at most this many times per run, its partial unroll dropped; 0: the first error stops the run
    max_env_restarts: int = attrs.field(default=10, validator=_non_negative)
    # seconds an env step or reset may take before the run stops naming the env (no restart); 0: no limit
    env_step_timeout: float = attrs.field(default=60.0, validator=attrs.validators.ge(0.0))
    check_observations: bool = True  # stop, naming the env and copy, on a NaN or infinite observation or reward
    # where the learner (the algorithm's variables and updates) runs, a TensorFlow device name such as "/GPU:0";
    # empty: TensorFlow's choice. Environments and the replay buffer stay in host memory whatever it says
    device: str = ""
    actor_device: str = ""  # where the acting policy runs ("/CPU:0": the host); empty: where the learner runs
    # two or more devices (["/GPU:0", "/GPU:1"]): the algorithm's variables are mirrored on each, every minibatch
    # is split over them and the gradients averaged (docs/configuration.md#several-learner-devices); empty: train.device
    learner_devices: list = attrs.field(factory=list)
    # "host:port" of every process of a multi-worker learner, the chief (index 0) first: each runs this config
    # with its own train.worker_index, collects its own data and averages every update's gradients with the
    # others (docs/configuration.md#several-learner-workers); empty: one process
    learner_workers: list = attrs.field(factory=list)
    worker_index: int = attrs.field(default=0, validator=_non_negative)  # this process's place in learner_workers
    # threads TensorFlow may split one op over: "auto" is 1 for vector observations (small networks: 1.2x the
    # updates/s: benchmarks/intra_op_threads.py) and one per core for images (convolutions); 0: TensorFlow's choice (docs/configuration.md#threads)
    intra_op_threads: Union[int, str] = attrs.field(default="auto", validator=_auto_or_non_negative)
    # compile each update's loss and gradients with XLA: 0.75-1.13x the updates/s in the first measurements, a SAC
    # iteration 0.56x as fast on a later CPU (benchmarks/xla_updates.py, docs/configuration.md#xla)
    jit_compile: bool = False
    # compile a graph environment's unroll (its steps and the policy's) into one XLA program: several times the
    # collection's env steps/s, and seconds more to start (benchmarks/graph_env_throughput.py --jit-compile-unroll);
    # a Python environment's unroll calls Python at every step, so it is not compiled
    jit_compile_unroll: bool = False
    # divide training rewards by a running std of each copy's discounted return (gamma: the algorithm's, else
    # 0.99), as VecNormalize's norm_reward; evaluation and reported returns stay in the game's units
    normalize_reward: bool = False
    reward_clip: float = attrs.field(default=10.0, validator=attrs.validators.gt(0.0))  # scaled rewards: +- this


#: Sections the engine itself owns (every other section belongs to a plugin).
CORE_SECTIONS = {"train": TrainConfig}

#: Keys that were renamed: naming the new one beats "unknown key".
RENAMED_KEYS = {"train.driver": "train.pipeline"}


@attrs.define
class RunConfig:
    """The whole configuration of one run."""

    train: TrainConfig = attrs.field(factory=TrainConfig)
    #: section name -> attrs config instance of the plugin class registered under it
    sections: dict = attrs.field(factory=dict)

    def section(self, name: str, config_class: type) -> Any:
        """The config of plugin section ``name`` (defaults when absent)."""
        return self.sections.get(name) or config_class()

    def to_dict(self) -> dict:
        """Section -> key -> value; unset keys (None) are left out, as TOML has no null."""
        out = {"train": _asdict(self.train)}
        out.update({name: _asdict(cfg) for name, cfg in sorted(self.sections.items())})
        return out

    def with_default_sections(self, classes: Mapping[str, type]) -> "RunConfig":
        """This config plus a section of defaults for each ``name -> config class`` it has no section for.

        Classes without keys (``NoConfig``) add nothing, and neither does one
        that cannot be made without values (a required key): the run reads
        that section, and says what is wrong, where it always did.
        """
        added = {}
        for name, cls in classes.items():
            if name in self.sections or not attrs.has(cls) or not attrs.fields(cls):
                continue
            try:
                added[name] = cls()
            except (TypeError, ValueError):
                continue
        return attrs.evolve(self, sections={**self.sections, **added}) if added else self

    def to_toml(self, comments: Iterable[str] = ()) -> str:
        """The config as TOML text, ``comments`` first (one ``#`` line each).

        A key that is unset (None) cannot be written, TOML having no null: it
        is a ``# key: unset`` comment at the top of its section, so the file
        still names every key; reading the file back leaves it unset.
        """
        import tomli_w

        parts = ["".join(f"# {line}\n" for line in comments)]
        tables = {"train": self.train, **dict(sorted(self.sections.items()))}
        for name, cfg in tables.items():
            header = tomli_w.dumps({name: {"key": 0}}).partition("\n")[0]  # [name], quoted if need be
            text = tomli_w.dumps({name: _asdict(cfg)})
            body = text[len(header) + 1:] if text.startswith(header + "\n") else text  # only sub-tables: no header
            unset = [f"# {k}: unset" for k, v in attrs.asdict(cfg, recurse=False).items() if v is None]
            parts.append("\n".join([header, *unset, body]).rstrip("\n") + "\n")
        return "\n".join(parts).lstrip("\n")


def _asdict(cfg: Any) -> dict:
    return {k: v for k, v in attrs.asdict(cfg, recurse=False).items() if v is not None}


def default_root_dir(algorithm: str, env: str, dataset: str = "") -> str:
    """``runs/<algorithm>-<what it learns from>-<time>``: a run's directory when ``train.root_dir`` is unset (the
    parent of ``--seeds`` too). What it learns from is ``dataset`` where one is named (the env of a dataset run may
    be known only once a plugin has read the dataset), else ``env``."""
    subject = "".join(c if c.isalnum() or c in "-_." else "_" for c in (dataset or env))
    return os.path.join("runs", f"{algorithm}-{subject}-{time.strftime('%Y%m%d-%H%M%S')}")
