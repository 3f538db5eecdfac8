"""Fast learning runs on the testing kit's tiny envs: CNN encoders on pixels, ``multi`` on a Dict observation,
action masks in training, evaluation and the exported policy, and a third-party encoder plugin.

``pixels`` and ``pixels-dict`` episodes are 4 rewarded choices among 4 actions here (``pixels``: 4 bands;
``pixels-dict``: 2 bands x 2 rows), so the best return is 4 and a random policy averages 1; the runs stop
once the greedy evaluation reaches ``TARGET``.
"""

import attrs
import numpy as np
import pytest
import tensorflow as tf

import rlengine
from rlengine import Encoder, hookimpl, without_action_mask
from rlengine.run.engine import Engine
from rlengine.testing import MaskedEnv, testing_plugin

TARGET = 3.8  # of 4: at most one wrong choice in the 8 evaluation episodes' 32


def _train(tmp_path, algorithm, env, steps, *, plugins=(), target=TARGET, **sections):
    train = {"algorithm": algorithm, "env": env, "num_envs": 8, "unroll_length": 8, "num_env_steps": steps,
             "writers": [], "eval_interval": 2, "num_eval_episodes": 8, "target_return": target,
             "checkpoint_seconds": 0, "max_env_restarts": 0, "root_dir": str(tmp_path)}
    train.update(sections.pop("train", {}))
    return Engine({"train": train, **sections}, extra_plugins=[("testing", testing_plugin()), *plugins]).train()


SMALL_NATURE = {"nature_cnn": {"features": 64}}
FOUR_ACTIONS = {"num_actions": 4}  # an untrained greedy policy solves pixels by luck 1 time in 4 ** 4


def test_ppo_with_nature_cnn_solves_pixels(tmp_path):
    ppo = {"encoder": "nature_cnn", "hidden_sizes": [], "learning_rate": 1e-3, "num_epochs": 4, "mini_batch_size": 32}
    result = _train(tmp_path, "ppo", "pixels", 4096, ppo=ppo, pixels=FOUR_ACTIONS, **SMALL_NATURE)
    assert result.reached_target and result.eval_return >= TARGET


def test_dqn_with_nature_cnn_solves_pixels(tmp_path):
    dqn = {"encoder": "nature_cnn", "hidden_sizes": [], "learning_rate": 1e-3, "mini_batch_size": 32,
           "mini_batch_length": 2, "initial_collect_steps": 64, "replay_capacity": 2048, "target_update_period": 20,
           "exploration_fraction": 0.2, "num_updates_per_iteration": 4}
    result = _train(tmp_path, "dqn", "pixels", 4096, dqn=dqn, pixels=FOUR_ACTIONS, **SMALL_NATURE)
    assert result.reached_target and result.eval_return >= TARGET


def test_ppo_with_multi_learns_pixels_dict_which_needs_both_leaves(tmp_path):
    ppo = {"encoder": "multi", "hidden_sizes": [], "learning_rate": 3e-3, "num_epochs": 4, "mini_batch_size": 32}
    result = _train(tmp_path, "ppo", "pixels-dict", 4096, ppo=ppo, multi={"features": 32, "mlp_sizes": [16]})
    assert result.reached_target and result.eval_return >= TARGET


# -- action masks ------------------------------------------------------------------------------------------

MASKED = {
    "ppo": {"hidden_sizes": [32], "num_epochs": 2, "mini_batch_size": 32},
    "ac": {"hidden_sizes": [32]},
    "dqn": {"hidden_sizes": [32], "mini_batch_size": 32, "initial_collect_steps": 64, "replay_capacity": 1024,
            "num_updates_per_iteration": 2, "exploration_fraction": 0.5},
}


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("algorithm", sorted(MASKED))
def test_masked_algorithms_never_take_an_illegal_action(tmp_path, algorithm):
    MaskedEnv.forget()
    # every illegal action raises in the env; no restarts in training (max_env_restarts = 0) nor in evaluation
    result = _train(tmp_path, algorithm, "masked", 512, target=None, **{algorithm: MASKED[algorithm]})
    assert result.env_steps == 512 and result.eval_return is not None
    assert MaskedEnv.checked >= 400 and MaskedEnv.illegal == []  # training and evaluation steps were checked
    observation = MaskedEnv("x", num_envs=64, seed=1).reset().observation
    legal = observation["action_mask"].astype(bool)
    assert not legal.all()
    rows = np.arange(64)
    # the exported policy: greedy on TensorFlow and TensorFlow Lite, and sampling (TensorFlow only)
    for backend, modes in (("tensorflow", (True, False)), ("tflite", (True,))):
        policy = rlengine.load(str(tmp_path), backend=backend, extra_plugins=[("testing", testing_plugin())])
        for deterministic in modes:
            action, _ = policy.predict(observation, deterministic=deterministic)
            assert legal[rows, action].all(), f"illegal actions on {backend} with deterministic={deterministic}"


# -- a third-party encoder -------------------------------------------------------------------------------


@attrs.define
class SquashConfig:
    width: int = attrs.field(default=16, validator=attrs.validators.gt(0))


class Squash(Encoder):
    """A third party's encoder: every leaf flattened (uint8 scaled to [0, 1]), one tanh layer of ``width``.

    ``Squash.made`` keeps every instance, each with its variables' starting values; ``Squash.traced``
    counts the traces of ``__call__``.
    """

    config_class = SquashConfig
    made: list = []
    traced = 0

    def __init__(self, observation_spec, config=None, name="encoder"):
        super().__init__(observation_spec, config, name)
        config = config or SquashConfig()
        size = sum(int(np.prod(s.shape)) for s in tf.nest.flatten(without_action_mask(observation_spec)))
        with self.name_scope:
            kernel = tf.random.stateless_normal([size, config.width], [7, len(Squash.made)]) / np.sqrt(size)
            self.kernel = tf.Variable(kernel, name="third_party_kernel")
            self.bias = tf.Variable(tf.zeros([config.width]), name="third_party_bias")
        self.output_size = config.width
        self.initial = [v.numpy() for v in self.variables]
        Squash.made.append(self)

    def __call__(self, observation):
        Squash.traced += 1  # Python runs once per trace
        leaves = [tf.cast(leaf, tf.float32) / (255.0 if leaf.dtype == tf.uint8 else 1.0)
                  for leaf in tf.nest.flatten(without_action_mask(observation))]
        x = tf.concat([tf.reshape(leaf, [tf.shape(leaf)[0], -1]) for leaf in leaves], -1)
        return tf.tanh(tf.matmul(x, self.kernel) + self.bias)


class SquashPlugin:
    """Registers ``squash`` through the network hook, as an installed package would; keeps the run's algorithm."""

    def __init__(self):
        self.algorithm = None

    @hookimpl
    def rlengine_register_networks(self, register):
        register("squash", Squash)

    @hookimpl
    def rlengine_train_start(self, run):
        self.algorithm = run.algorithm


def _squash_run(tmp_path, algorithm, env, steps, **sections):
    Squash.made, Squash.traced = [], 0
    plugin = SquashPlugin()
    result = _train(tmp_path, algorithm, env, steps, plugins=[("squash", plugin)], squash={"width": 8}, **sections)
    names = [v.name for v in plugin.algorithm.trainable_variables]
    assert any("third_party_kernel" in name for name in names), names
    assert Squash.traced > 0 and all(e.config.width == 8 for e in Squash.made)  # its own [squash] section
    return result, [e for e in Squash.made if e.trainable_variables]


def _trained(encoder) -> bool:
    return any(not np.allclose(v.numpy(), start) for v, start in zip(encoder.variables, encoder.initial))


def test_a_third_party_encoder_trains_with_ppo(tmp_path):
    ppo = {"encoder": "squash", "hidden_sizes": [], "learning_rate": 3e-3, "num_epochs": 4, "mini_batch_size": 32}
    result, trainable = _squash_run(tmp_path, "ppo", "pixels", 4096, ppo=ppo, pixels=FOUR_ACTIONS)
    assert len(trainable) == 1 and _trained(trainable[0])  # shared by actor and critic (the default)
    assert result.reached_target and result.eval_return >= TARGET


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("share", [False, True])
def test_a_third_party_encoder_trains_with_sac_as_actor_critic_and_target_encoders(tmp_path, share):
    sac = {"encoder": "squash", "share_encoder": share, "hidden_sizes": [16], "mini_batch_size": 32,
           "initial_collect_steps": 64, "replay_capacity": 1024, "num_updates_per_iteration": 4}
    result, trainable = _squash_run(tmp_path, "sac", "Pendulum-v1", 256, target=None,
                                    train={"num_envs": 2, "unroll_length": 16, "num_eval_episodes": 1, "eval_interval": 8},
                                    sac=sac)
    assert result.env_steps == 256 and result.eval_return < 0
    scopes = sorted(e.name for e in Squash.made)
    # the critics' encoder, its target copy (not trainable) and, unless shared, the actor's
    assert len(trainable) == (1 if share else 2) and len(Squash.made) == len(trainable) + 1, scopes
    assert all(_trained(e) for e in trainable)
