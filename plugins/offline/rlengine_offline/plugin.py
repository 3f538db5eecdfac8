"""The ``offline`` plugin: learning from Minari datasets.

It registers the ``offline`` pipeline, the ``bc``, ``td3_bc``, ``iql``, ``cql`` and ``discrete_cql`` algorithms
and the ``collect`` command, and configures a run that names ``train.dataset``: its pipeline becomes ``offline`` and, unless
``train.env`` names another environment than the default, its environment is the one the dataset was
recorded on (what evaluation steps). A run that also names ``train.init_from`` (or a pipeline that steps,
such as ``async``) learns online instead: the dataset starts its replay (``rlengine_dataset_rows``), offline
to online. Classes are ``"module:Class"`` strings, so loading this entry point
imports neither Minari nor TensorFlow.
"""

from __future__ import annotations

import attrs

from rlengine import ConfigError, RunConfig, TrainConfig, hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.9"

#: Registered name -> "module:Class" of the algorithms that learn only from datasets.
ALGORITHMS = {"bc": "rlengine_offline.bc:BC", "td3_bc": "rlengine_offline.td3_bc:TD3BC",
              "iql": "rlengine_offline.iql:IQL", "cql": "rlengine_offline.cql:CQL",
              "discrete_cql": "rlengine_offline.discrete_cql:DiscreteCQL"}


#: The algorithms that cannot act in an environment to learn (no exploration of their own).
OFFLINE_ONLY = ("bc",)


def refuse_discrete(algorithm: str, action_spec) -> None:
    """One line refusing ``algorithm`` for Discrete actions, pointing at ``bc`` and ``discrete_cql``; called
    before the algorithms plugin's base would refuse them pointing at ``dqn``."""
    if action_spec.dtype.is_integer:
        raise ConfigError(f"algorithm {algorithm!r} supports Box (continuous) actions, not Discrete; for a Discrete "
                          "dataset use 'bc' or 'discrete_cql'")


@hookimpl
def rlengine_register_algorithms(register):
    for name, reference in ALGORITHMS.items():
        register(name, reference)


@hookimpl
def rlengine_register_pipelines(register):
    register("offline", "rlengine_offline.pipeline:OfflinePipeline")


@hookimpl
def rlengine_register_commands(register):
    register("collect", "rlengine_offline.collect:Collect")


@hookimpl
def rlengine_dataset_rows(dataset: str, config: RunConfig, specs, rows_spec):
    """The rows of a Minari dataset for an online run's replay (offline to online)."""
    from rlengine_offline.datasets import check_spaces, dataset_chunks, open_dataset

    opened = open_dataset(dataset)
    check_spaces(opened, specs.raw_time_step.observation, specs.action, config.train.env)
    return dataset_chunks(opened, rows_spec)


@hookimpl
def rlengine_configure(config: RunConfig):
    train = config.train
    # offline to online: a run that starts from another (init_from) or names a pipeline that steps
    online = train.pipeline != "offline" and (bool(train.init_from) or train.pipeline != TrainConfig().pipeline)
    if online and train.algorithm in OFFLINE_ONLY:
        raise ConfigError(f"algorithm {train.algorithm!r} learns only from a dataset and cannot learn by stepping "
                          f"(pipeline {train.pipeline!r}): fine-tune with one that explores (e.g. iql, td3_bc or "
                          "sac), or set train.pipeline = \"offline\"")
    if not train.dataset:
        if train.algorithm in ALGORITHMS and not online:
            raise ConfigError(f"algorithm {train.algorithm!r} learns from a dataset and steps no environment: "
                              "give one with --dataset ID (train.dataset; rlengine collect records one)")
        return None
    changes = {}
    if train.pipeline == TrainConfig().pipeline and not online:  # online, the dataset starts the replay
        changes["pipeline"] = "offline"
    if train.env == TrainConfig().env:
        from rlengine_offline.datasets import env_id_of, open_dataset

        env = env_id_of(open_dataset(train.dataset))
        if env is not None and env != train.env:
            changes["env"] = env
    return attrs.evolve(config, train=attrs.evolve(train, **changes)) if changes else None
