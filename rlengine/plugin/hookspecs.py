"""Every hook rlengine calls. Plugins implement them with ``@rlengine.hookimpl``.

Registration hooks run once per run, when the plugin manager is built, and
are handed a ``register`` callable owned by the core; the core checks names
and types and remembers which plugin registered what. Lifecycle hooks are
implemented by plugin modules, and by callbacks: classes registered with
``rlengine_register_callbacks``, one instance of each per run, registered
for that run only. Lifecycle hooks run in this order during ``rlengine train``::

    rlengine_configure -> rlengine_train_start [-> rlengine_dataset_rows]
        -> (rlengine_iteration_end [-> rlengine_evaluation_end] [-> rlengine_checkpoint_saved])*
    -> rlengine_train_end        # always, also when the run fails
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Protocol

from rlengine.plugin.markers import hookspec

if TYPE_CHECKING:
    from rlengine.api.run import Run
    from rlengine.config.schema import RunConfig


class Register(Protocol):
    """The ``register`` callable a registration hook receives.

    ``obj`` is the class, or a ``"module:attribute"`` string naming it: then
    the module is imported only when a run (or a command) first uses it, so
    listing plugins stays cheap. The core checks the name is unique and the
    class is of the kind's base class, naming the plugin when it is not.
    """

    def __call__(self, name: str, obj: Any, *extra: Any) -> None: ...


# -- registration ----------------------------------------------------------
@hookspec
def rlengine_register_algorithms(register: Register) -> None:
    """Register algorithm classes.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name (used as ``train.algorithm`` and as the TOML section
    of the algorithm's config) and a subclass of :class:`rlengine.Algorithm`.
    The return value is ignored.
    """


@hookspec
def rlengine_register_environments(register: Register) -> None:
    """Register environment classes.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name and a subclass of :class:`rlengine.Environment`. A
    run whose ``train.env`` is a registered name uses that class, and so
    does an id ``name/task`` (``envpool/Pong-v5`` goes to ``envpool``); any
    other id goes to the class named by ``train.env_provider`` (default ``gym``).
    The return value is ignored.
    """


@hookspec
def rlengine_register_graph_environments(register: Register) -> None:
    """Register graph environments: environments written as TensorFlow functions.

    Called once when the plugin manager is built. ``register(env_id, cls)``
    takes the environment id users train on (``train.env``, e.g.
    ``"tf/CartPole-v1"``) and a subclass of :class:`rlengine.GraphEnvironment`.
    A run whose ``train.env`` is a registered id steps that class inside its
    graphs; the same id must not also be a registered environment provider.
    The return value is ignored.
    """


@hookspec
def rlengine_register_transformers(register: Register) -> None:
    """Register observation-transformer classes.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name (listed in ``train.transformers``) and a subclass of
    :class:`rlengine.ObservationTransformer`. The return value is ignored.
    """


@hookspec
def rlengine_register_writers(register: Register) -> None:
    """Register summary-writer classes.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name (listed in ``train.writers``) and a subclass of
    :class:`rlengine.SummaryWriter`. The return value is ignored.
    """


@hookspec
def rlengine_register_distributions(register: Register) -> None:
    """Register how a distribution type is stored as tensors.

    Called once when the plugin manager is built. ``register(name, cls,
    to_params, from_params)`` takes a unique name, a ``tfp`` distribution
    class, a function returning a dict of tensor parameters of an instance,
    and a function rebuilding an instance from that dict. The return value
    is ignored.
    """


@hookspec
def rlengine_register_pipelines(register: Register) -> None:
    """Register pipeline classes: how a run moves data from environments to the learner.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name (used as ``train.pipeline`` and as the TOML section
    of the pipeline's config) and a subclass of :class:`rlengine.Pipeline`.
    The core registers ``sync`` and ``async`` through this hook. The return
    value is ignored.
    """


@hookspec
def rlengine_register_networks(register: Register) -> None:
    """Register encoder classes: networks that map an observation nest to ``[B, features]``.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name (what an algorithm's ``encoder`` key names, and the
    TOML section of the encoder's config) and a subclass of
    :class:`rlengine.Encoder`. Algorithms build them with
    :meth:`rlengine.Algorithm.make_encoder`. The return value is ignored.
    """


@hookspec
def rlengine_register_presets(register: Register) -> None:
    """Register presets: tuned settings of one algorithm on one environment, as a TOML config file.

    Called once when the plugin manager is built. ``register(name, path)``
    takes a unique name ``"<algorithm>/<env id>"`` (e.g. ``"sac/Pendulum-v1"``)
    and the :class:`pathlib.Path` of a whole config whose ``[train]`` sets that
    ``algorithm`` and ``env`` (a ``str`` would be read as a ``"module:attribute"``
    reference to such a path). The file is read only when a run uses it:
    ``rlengine train --algorithm A --env E`` without a config file starts from
    the preset ``A/E``, its flags and ``--set`` overrides on top, unless
    ``--no-preset`` is given. A plugin may ship presets for algorithms or
    environments of other plugins. The return value is ignored.
    """


@hookspec
def rlengine_register_commands(register: Register) -> None:
    """Register subcommands of the ``rlengine`` CLI.

    Called once when the plugin manager is built, before the command line is
    parsed. ``register(name, cls)`` takes a unique name (``rlengine NAME``)
    and a subclass of :class:`rlengine.Command`. The core registers
    ``train`` and ``plugins`` through this hook. The return value is ignored.
    """


@hookspec
def rlengine_register_callbacks(register: Register) -> None:
    """Register callback classes: lifecycle hooks with a config section of their own.

    Called once when the plugin manager is built. ``register(name, cls)``
    takes a unique name and a class (or a ``"module:Class"`` string) whose
    methods implement lifecycle hooks (``rlengine_train_start``,
    ``rlengine_iteration_end``, ``rlengine_evaluation_end``,
    ``rlengine_checkpoint_saved``, ``rlengine_train_end``) with
    ``@rlengine.hookimpl``. The class may set ``config_class`` (attrs): its
    TOML section is the callback's name. When a run starts training, the
    core makes one instance, ``cls(config)`` with that section's config, and
    registers it with the run's plugin manager until the run ends (also when
    it fails); ``train.disabled_callbacks`` leaves callbacks out by name,
    while everything else their plugin registers stays. The return value
    is ignored.
    """


# -- lifecycle -------------------------------------------------------------
@hookspec
def rlengine_configure(config: "RunConfig") -> Optional["RunConfig"]:
    """Adjust or validate the run's configuration before anything is built.

    Called once per run, after the TOML file and overrides are applied.
    ``config`` is the validated :class:`rlengine.RunConfig`. Return a new
    config (e.g. ``attrs.evolve(config, ...)``) to replace it, or ``None``
    to keep it; raise :class:`rlengine.ConfigError` to refuse it.
    Implementations are chained: each sees the previous one's result.
    """


@hookspec(firstresult=True)
def rlengine_dataset_rows(dataset: str, config: "RunConfig", specs: Any, rows_spec: Any) -> Optional[Iterable[Any]]:
    """The rows of ``dataset`` for an off-policy run's replay, or ``None`` when this plugin does not read it.

    Called once when a run that steps environments names ``train.dataset``
    (offline to online: its replay starts with the dataset's episodes; on a
    resume, only when the replay was not checkpointed). ``specs`` are the
    run's prepared :class:`~rlengine.api.specs.RunSpecs`, to check the
    dataset's spaces against (raise :class:`rlengine.ConfigError` naming
    both when they differ); ``rows_spec`` is the spec of one replay row.
    Yield nests of numpy rows shaped like ``rows_spec`` with a leading row
    axis, episode after episode (each episode FIRST ... LAST, as
    :mod:`rlengine.api.data` defines them); the core assigns the rows to the
    replay's rings. The first plugin that returns something other than
    ``None`` is used; the rows it returns are read once.
    """


@hookspec
def rlengine_train_start(run: "Run") -> None:
    """Called once when training starts, after specs are prepared.

    ``run`` gives the config, the algorithm, the environments, the prepared
    specs and the root dir. Nothing of the run is written yet: raise to
    refuse it and the root dir is left as it was. The return value is ignored.
    """


@hookspec
def rlengine_iteration_end(run: "Run", iteration: int, metrics: Mapping[str, float]) -> None:
    """Called after every training iteration (collection plus update).

    ``iteration`` counts from 1; ``metrics`` are that iteration's scalars
    (``env_steps``, losses, episode returns, timings). The return value is
    ignored.
    """


@hookspec
def rlengine_evaluation_end(run: "Run", iteration: int, metrics: Mapping[str, float]) -> None:
    """Called after each evaluation of the greedy policy.

    ``metrics`` holds ``eval/average_return``, ``eval/std_return`` and
    ``eval/average_length``. The return value is ignored.
    """


@hookspec
def rlengine_checkpoint_saved(run: "Run", iteration: int, path: str) -> None:
    """Called after a checkpoint has been completely written to ``path``.

    The return value is ignored.
    """


@hookspec
def rlengine_train_end(run: "Run", error: Optional[BaseException]) -> None:
    """Called once when training ends, whether it succeeded or failed.

    ``error`` is the exception that ended the run, or ``None`` on success.
    The return value is ignored.
    """


def hook_names() -> list[str]:
    """Names of every hook, in the order they are declared here."""
    return [n for n in globals() if n.startswith("rlengine_")]

