"""Spec preparation with image and Dict observations: uint8 stays uint8 and dicts stay dicts, from the
environment through rollout, the on-policy learner and replay, to the policy a run leaves behind."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import rlengine
from rlengine import Algorithm, LossInfo, PolicyStep, StepType, hookimpl
from rlengine.run.engine import Engine
from rlengine.testing import (
    IllegalAction,
    MaskedEnv,
    PixelsConfig,
    PixelsDictEnv,
    PixelsEnv,
    testing_plugin,
    tiny_config,
)

IMAGE = tf.TensorSpec([36, 36, 1], tf.uint8)
OBSERVATIONS = {
    "pixels": IMAGE,
    "pixels-dict": {"image": IMAGE, "vector": tf.TensorSpec([2], tf.float32)},
    "masked": {"action_mask": tf.TensorSpec([4], tf.uint8), "obs": tf.TensorSpec([4], tf.float32)},
}


def _dtypes(observation):
    return tf.nest.map_structure(lambda t: t.dtype, observation)


class Probe(Algorithm):
    """Reads every observation leaf (cast to float inside, as an encoder does) and records, per method,
    the observation dtypes it was given; learns the reward of each action like ``toy-q`` and takes the
    best legal one."""

    seen: dict = {}

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.q = tf.Variable(tf.zeros([int(action_spec.maximum) + 1]), name="q")
        self.optimizer = tf_keras.optimizers.SGD(0.2)
        Probe.seen = {}

    def _record(self, method, observation):
        Probe.seen[method] = _dtypes(observation)  # at trace time: dtypes are static
        features = [tf.reshape(tf.cast(leaf, tf.float32), [tf.shape(leaf)[0], -1]) for leaf in tf.nest.flatten(observation)]
        return tf.reduce_sum(tf.concat(features, -1), -1)

    def _act(self, method, time_step, state):
        features = self._record(method, time_step.observation)
        q = self.q + 0.0 * features[:, None]  # [B, n]
        mask = rlengine.action_mask_of(time_step.observation)
        if mask is not None:  # legal actions only
            q = tf.where(mask > 0, q, q.dtype.min)
        return PolicyStep(tf.argmax(q, -1, output_type=tf.int32), state, ())

    def predict(self, time_step, state):
        return self._act("predict", time_step, state)

    def rollout(self, time_step, state):
        return self._act("rollout", time_step, state)

    def train_step(self, exp, state):
        self._record("train_step", exp.observation)
        return PolicyStep((), state, {"q": tf.gather(self.q, exp.action), "reward": exp.reward})

    def train_complete(self, tape, info, weight=None):
        with tape:
            loss = tf.reduce_mean(tf.square(info["q"] - info["reward"]))
        grads = tape.gradient(loss, [self.q])
        return LossInfo(loss, {}), [(grads[0], self.q)]


class ReplayProbe(Probe):
    """``Probe`` trained from replay: rows 0 of each sampled pair keep their whole observation."""

    off_policy = True
    mini_batch_size = 4
    mini_batch_length = 2
    num_updates_per_iteration = 2
    initial_collect_steps = 8
    replay_capacity = 64

    def preprocess_experience(self, exp):
        first = tf.nest.map_structure(lambda t: t[0], exp)
        return first._replace(reward=exp.reward[1] * tf.cast(exp.step_type[0] != StepType.LAST, tf.float32))


class ProbePlugin:
    def __init__(self):
        self.specs = None

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("probe", Probe)
        register("replay-probe", ReplayProbe)

    @hookimpl
    def rlengine_train_start(self, run):
        self.specs = run.specs


def plugins(probe=None):
    return [("testing", testing_plugin()), ("probe", probe or ProbePlugin())]


def _train(tmp_path, env, algorithm):
    probe = ProbePlugin()
    raw = tiny_config(str(tmp_path), algorithm=algorithm, env=env, num_env_steps=48, num_eval_episodes=1)
    result = Engine(raw, extra_plugins=plugins(probe)).train()
    return result, probe.specs


@pytest.mark.parametrize("env", sorted(OBSERVATIONS))
@pytest.mark.parametrize("algorithm", ["probe", "replay-probe"])
def test_image_and_dict_observations_keep_their_dtypes_and_structure(tmp_path, env, algorithm):
    result, specs = _train(tmp_path, env, algorithm)
    assert result.env_steps == 48
    expected = OBSERVATIONS[env]
    for observation in (specs.raw_time_step.observation, specs.time_step.observation, specs.experience.observation):
        tf.nest.assert_same_structure(observation, expected)  # a dict stays a dict, with its keys
        assert observation == expected  # shapes and dtypes: an image is stored as uint8, not float32
    assert Probe.seen.keys() == {"predict", "rollout", "train_step"}  # evaluation, collection and training ran
    for method, dtypes in Probe.seen.items():
        assert dtypes == _dtypes(expected), method
    # the policy the run leaves behind takes the same observations: uint8 images, dicts
    policy = rlengine.load(str(tmp_path), backend="tensorflow", extra_plugins=plugins())
    observation = tf.nest.map_structure(lambda s: np.ones([3, *s.shape], s.dtype.as_numpy_dtype), expected)
    action, _ = policy.predict(observation)
    assert action.shape == (3,) and Probe.seen["predict"] == _dtypes(expected)


@pytest.mark.parametrize("cls", [PixelsEnv, PixelsDictEnv, MaskedEnv])
def test_the_kit_envs_are_seeded_per_copy_and_restart_after_last(cls):
    a = cls("x", num_envs=2, seed=5)
    b = cls("x", num_envs=1, seed=5, first_env_id=1)  # copy 1 alone: the same episodes as copy 1 above
    steps_a, steps_b = [a.reset()], [b.reset()]
    for _ in range(6):
        legal = _legal_actions(steps_a[-1].observation, 2)
        steps_a.append(a.step(legal))
        steps_b.append(b.step(legal[1:]))
    for ta, tb in zip(steps_a, steps_b):
        tf.nest.map_structure(lambda x, y: np.testing.assert_array_equal(x[1:], y), ta, tb)
    step_types = [int(t.step_type[0]) for t in steps_a]
    assert step_types == [StepType.FIRST, StepType.MID, StepType.MID, StepType.MID, StepType.LAST,
                          StepType.FIRST, StepType.MID]
    assert steps_a[5].reward.tolist() == [0.0, 0.0]  # the action on a LAST step is ignored


def _legal_actions(observation, n):
    if isinstance(observation, dict) and "action_mask" in observation:
        return np.argmax(observation["action_mask"], axis=1).astype(np.int32)
    return np.zeros(n, np.int32)


def test_pixels_dict_rewards_the_action_of_the_images_band_in_the_vectors_row():
    env, twin = PixelsDictEnv("x", num_envs=64, seed=0), PixelsDictEnv("x", num_envs=64, seed=0)
    assert env.action_spec().maximum == 3  # 2 rows of 2 bands
    obs = env.reset().observation
    twin.reset()
    band = (obs["image"][:, :, 18:, 0].mean(axis=(1, 2)) > 128).astype(np.int32)  # right half bright: band 1
    row = np.argmax(obs["vector"], axis=1).astype(np.int32)
    assert set(zip(band, row)) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert env.step(2 * row + band).reward.tolist() == [1.0] * 64
    assert twin.step(2 * (1 - row) + band).reward.tolist() == [0.0] * 64  # the image alone is not enough


def test_pixels_with_more_actions_has_one_bright_band_per_action():
    env = PixelsEnv("x", num_envs=64, seed=0, config=PixelsConfig(num_actions=4))
    assert env.action_spec().maximum == 3
    image = env.reset().observation
    columns = image[:, 0, :, 0]  # [B, 36]: 4 bands of 9 columns, one bright
    band = np.argmax(columns, axis=1) // 9
    np.testing.assert_array_equal(columns, np.where(np.arange(36)[None] // 9 == band[:, None], 255, 0))
    assert set(band) == {0, 1, 2, 3}
    assert env.step(band.astype(np.int32)).reward.tolist() == [1.0] * 64
    with pytest.raises(rlengine.ConfigError, match="num_actions .40. must be at most size .36."):
        PixelsEnv("x", num_envs=1, seed=0, config=PixelsConfig(num_actions=40))


def test_masked_rewards_the_pointed_legal_action_ignores_the_action_after_last_and_raises_on_an_illegal_one():
    MaskedEnv.forget()
    env = MaskedEnv("x", num_envs=32, seed=0)
    obs = env.reset().observation
    for _ in range(4):  # the goal is always legal and earns 1
        goal = np.argmax(obs["obs"], axis=1).astype(np.int32)
        assert obs["action_mask"][np.arange(32), goal].all()
        time_step = env.step(goal)
        obs = time_step.observation
        assert time_step.reward.tolist() == [1.0] * 32
    assert MaskedEnv.checked == 4 * 32 and time_step.step_type.tolist() == [StepType.LAST] * 32
    obs = env.step(np.full(32, 9, np.int32)).observation  # ignored: the copies restart
    mask = obs["action_mask"]
    row = int(np.flatnonzero(mask.min(axis=1) == 0)[0])
    action = np.argmax(mask, axis=1).astype(np.int32)
    action[row] = int(np.flatnonzero(mask[row] == 0)[0])
    with pytest.raises(IllegalAction, match=f"copy {row} got illegal action {action[row]}"):
        env.step(action)
    assert MaskedEnv.illegal == [(row, int(action[row]), mask[row].tolist())]
