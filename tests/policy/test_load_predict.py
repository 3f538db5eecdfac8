"""rlengine.load(run_dir).predict(...): the policy of a run, acting without the engine or an environment."""

import json
import os
import re
import shutil
from typing import Optional

import numpy as np
import pytest
import tensorflow as tf

import rlengine
from rlengine import StepType
from rlengine.collect.policy_step import greedy
from rlengine.policy.backends import disagreement
from rlengine.run.checkpoints.saved_specs import (
    SPECS_FILE,
    DamagedSpecs,
    decode_specs,
    encode_specs,
    read_specs,
    write_specs,
)
from rlengine.testing import CountingEnv
from tests.policy.runs import REPO_DIR, Counted, load, plugins, train, train_cartpole

BACKENDS = ["tensorflow", "tflite"]


# -- the specs a run saves --------------------------------------------------------------------
def test_training_saves_the_environment_specs_loading_needs(toy_run):
    raw, action = read_specs(toy_run)
    env = CountingEnv("counting", 1, 0)
    assert raw == env.time_step_spec() and action == env.action_spec()
    assert (action.minimum, action.maximum) == (0, 1)


def test_specs_of_every_kind_of_nest_round_trip_through_json():
    bounded = rlengine.BoundedTensorSpec([2], tf.float32, np.array([-np.inf, 0.0], np.float32), np.float32(0.5))
    observation = {"image": tf.TensorSpec([None, 3], tf.uint8),
                   "parts": (tf.TensorSpec([], tf.bool), [bounded, tf.TensorSpec([], tf.int32)])}
    raw = CountingEnv("counting", 1, 0).time_step_spec()._replace(observation=observation)
    action = {"move": bounded}
    again_raw, again_action = decode_specs(json.loads(json.dumps(encode_specs(raw, action))))
    assert again_raw == raw and again_action == action
    decoded = again_raw.observation["parts"][1][0]
    np.testing.assert_array_equal(decoded.minimum, [-np.inf, 0.0])
    assert decoded.maximum.dtype == np.float32 and float(decoded.maximum) == 0.5


def test_specs_it_cannot_save_are_not_written_and_a_damaged_file_is_one_line(tmp_path):
    from collections import namedtuple

    pair = namedtuple("Pair", "a b")
    raw = CountingEnv("counting", 1, 0).time_step_spec()
    unsavable = raw._replace(observation=pair(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.float32)))
    assert not write_specs(str(tmp_path), unsavable, tf.TensorSpec([], tf.int32))
    assert not os.path.exists(tmp_path / SPECS_FILE) and read_specs(str(tmp_path)) is None
    (tmp_path / SPECS_FILE).write_text('{"format": 1, "time_step": {}}')
    with pytest.raises(DamagedSpecs) as err:
        read_specs(str(tmp_path))
    assert "specs.json is damaged ('step_type'): delete it" in str(err.value) and "\n" not in str(err.value)


# -- loading: no environment --------------------------------------------------------------------
def test_loading_and_predicting_build_no_environment(dict_run):
    Counted.made = []
    policy = load(dict_run)
    policy.predict({"position": np.zeros(2), "parity": 0})
    assert Counted.made == []


def test_a_run_without_specs_json_asks_one_environment_copy_and_closes_it(toy_run, tmp_path):
    old_run = str(tmp_path / "old")
    shutil.copytree(toy_run, old_run)
    os.remove(os.path.join(old_run, SPECS_FILE))  # as runs trained before the file existed
    Counted.made = []
    policy = load(old_run, backend="tensorflow")
    assert [(env.num_envs, env.closed) for env in Counted.made] == [(1, True)]
    assert policy.predict(np.zeros(2, np.float32))[0] == load(toy_run, backend="tensorflow").predict(np.zeros(2))[0]


# -- predicting ---------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_one_observation_gives_one_action_and_a_batch_a_batch(toy_run, backend):
    policy = load(toy_run, backend=backend)
    assert policy.backend == backend and not policy.stateful
    action, state = policy.predict([3.0, 0.0])
    assert state is None and np.shape(action) == () and action.dtype == np.int32
    batch = np.array([[0, 0], [1, 0], [2, 1]], np.float32)
    actions, _ = policy.predict(batch)
    assert actions.shape == (3,)
    assert list(actions) == [policy.predict(row)[0] for row in batch]
    assert list(policy.predict(np.repeat(batch, 2, axis=0)[::2])[0]) == list(actions)  # a strided view


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("run", ["dict_run", "shift_run"])
def test_greedy_actions_are_the_evaluators(run, backend, request):
    """Step the run's evaluation environment with the greedy step the evaluator takes; predict agrees on
    every step, carrying its state and told where episodes begin."""
    run_dir = request.getfixturevalue(run)
    policy = load(run_dir, backend=backend)
    engine = rlengine.Engine(os.path.join(run_dir, "config.toml"),
                             [f"train.root_dir={json.dumps(run_dir)}", "train.num_eval_episodes=3"], **plugins())
    with engine.restored() as components:
        env, chain, algorithm = components.eval_env, components.chain, components.algorithm
        act = tf.function(lambda raw, t, p: greedy(chain, algorithm, raw, t, p, 3), autograph=False)
        raw, state = env.reset(), None
        t_state, p_state = components.chain.initial_state(3), components.algorithm.initial_state(3)
        seen = set()
        for _ in range(12):  # three episodes of 4 steps, and the start of the next
            expected, t_state, p_state = act(raw, t_state, p_state)
            action, state = policy.predict(raw.observation, state, episode_start=raw.step_type == StepType.FIRST)
            np.testing.assert_array_equal(action, expected.numpy())
            seen |= set(action.tolist())
            raw = env.step(expected.numpy())
    assert seen == {0, 1}  # the comparison covered both actions


def test_recurrent_state_is_carried_reset_where_episodes_begin_and_checked(dict_run):
    policy = load(dict_run)
    assert policy.stateful
    observation = {"position": np.array([1.0, 0.0]), "parity": 1}
    _, state = policy.predict(observation)
    counts = [state.flat[0].tolist()]
    for start in (False, False, True, False):
        _, state = policy.predict(observation, state, episode_start=start)
        counts.append(state.flat[0].tolist())
    assert counts == [[1.0], [2.0], [3.0], [1.0], [2.0]]
    batch = {"position": np.zeros([3, 2]), "parity": np.zeros([3], np.int32)}
    _, state = policy.predict(batch)
    _, state = policy.predict(batch, state, episode_start=[False, True, False])
    assert state.flat[0].tolist() == [2.0, 1.0, 2.0] and state.batch_size == 3
    with pytest.raises(rlengine.SpecMismatchError, match=r"^state holds 3 episode\(s\) but the observation is for 1"):
        policy.predict(observation, state)
    with pytest.raises(rlengine.SpecMismatchError, match="^episode_start has 2 values for 3 observation"):
        policy.predict(batch, state, episode_start=[True, False])


def test_transformers_apply_their_restored_statistics_without_updating_and_carry_their_state(shift_run):
    policy = load(shift_run)
    (shift,) = policy.transformers
    saved = {name: value for name, value in
             ((n, tf.train.load_variable(policy.checkpoint, n)) for n, _ in tf.train.list_variables(policy.checkpoint))
             if "offset" in name}
    assert list(saved.values()) == [shift.offset.numpy()] and shift.offset.numpy() > 0  # training updated it
    first, second = np.array([1.0, 0.0], np.float32), np.array([2.0, 0.0], np.float32)
    _, state = policy.predict(first)
    np.testing.assert_array_equal(state.flat[0], [first])  # the transformer's state comes first
    for _ in range(20):
        _, after = policy.predict(second, state)
    np.testing.assert_array_equal(after.flat[0], [second])
    assert shift.offset.numpy() == list(saved.values())[0]


def test_sampling_draws_from_the_exploration_policy_with_its_own_seed(toy_run):
    zeros = np.zeros([400, 2], np.float32)
    policy = load(toy_run, seed=3)
    sampled, _ = policy.predict(zeros, deterministic=False)
    assert set(sampled.tolist()) == {0, 1}
    assert list(load(toy_run, seed=3).predict(zeros, deterministic=False)[0]) == list(sampled)
    assert list(load(toy_run, seed=4).predict(zeros, deterministic=False)[0]) != list(sampled)
    greedy = policy.predict(zeros)[0]
    assert len(set(greedy.tolist())) == 1 and list(policy.predict(zeros)[0]) == list(greedy)


def test_auto_converts_in_the_background_and_agrees(shift_run):
    policy = load(shift_run, backend="auto")
    reference = load(shift_run, backend="tensorflow")
    assert policy.wait_for_conversion(timeout=60) == "tflite" and policy.conversion_error is None
    observations = np.random.default_rng(0).normal(size=[5, 8, 2]).astype(np.float32)
    state = expected_state = None
    for obs in observations:
        action, state = policy.predict(obs, state)
        expected, expected_state = reference.predict(obs, expected_state)
        np.testing.assert_array_equal(action, expected)
        np.testing.assert_allclose(state.flat[1], expected_state.flat[1], rtol=1e-5)


def test_a_step_that_cannot_be_converted_stays_on_tensorflow(tmp_path_factory):
    run_dir = train(tmp_path_factory, "unconvertible", env="counted", algorithm="unconvertible")
    with pytest.raises(rlengine.RLEngineError) as err:
        load(run_dir, backend="tflite")
    assert "cannot run on TensorFlow Lite (" in _one_line(err) and "load it with backend='tensorflow'" in str(err.value)
    policy = load(run_dir, backend="auto")
    assert policy.wait_for_conversion(timeout=60) == "tensorflow" and policy.conversion_error
    assert policy.predict(np.zeros([2, 2]))[0].tolist() == load(run_dir).predict(np.zeros([2, 2]))[0].tolist()


def test_a_converted_step_is_used_only_if_it_agrees_on_the_probe():
    inputs = [np.zeros([2, 1], np.float32), np.array([0, 1], np.int32), np.zeros([2, 1], np.float32)]

    def reference(x):
        return [np.array([1, 0], np.int32), x[2] + 1.0]  # action, then the next state

    def close(x):
        return [np.array([1, 0], np.int32), x[2] + 1.0 + 1e-7]

    def other_action(x):
        return [np.array([1, 1], np.int32), x[2] + 1.0]

    def drifting_state(x):
        return [np.array([1, 0], np.int32), x[2] * 1.5 + 1.0]  # agrees on the first step only

    assert disagreement(reference, close, inputs, 1, 1) == ""
    assert disagreement(reference, other_action, inputs, 1, 1) == "output 0 differs"
    assert disagreement(reference, drifting_state, inputs, 1, 1) == "output 1 differs by up to 0.5"


# -- one-line errors ----------------------------------------------------------------------------
def _one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and isinstance(excinfo.value, rlengine.RLEngineError)
    return message


def test_what_is_not_a_loadable_run_directory_is_one_line(tmp_path, toy_run):
    cases = {str(tmp_path / "missing"): "does not exist: pass the --root-dir of a 'rlengine train' run"}
    (tmp_path / "file").write_text("")
    cases[str(tmp_path / "file")] = "is a file"
    (tmp_path / "empty").mkdir()
    cases[str(tmp_path / "empty")] = "is not an rlengine run directory (no config.toml)"
    (tmp_path / "untrained").mkdir()
    shutil.copy(os.path.join(toy_run, "config.toml"), tmp_path / "untrained")
    cases[str(tmp_path / "untrained")] = "no checkpoint in"
    for run_dir, message in cases.items():
        with pytest.raises(rlengine.RLEngineError) as err:
            load(run_dir)
        assert message in _one_line(err), run_dir
    for choice, message in [("bogus", "checkpoint 'bogus' is not a choice: use latest, best or an iteration"),
                            (999, "has no sound checkpoint of iteration 999 (kept: 4, 2)")]:
        with pytest.raises(rlengine.RLEngineError) as err:
            load(toy_run, choice)
        assert message in _one_line(err)
    with pytest.raises(rlengine.ConfigError) as err:
        load(toy_run, backend="gpu")
    assert _one_line(err) == "backend 'gpu' is not one of auto, tflite, tensorflow"


def test_the_latest_the_best_or_a_numbered_checkpoint_is_restored(toy_run):
    assert load(toy_run).checkpoint == os.path.join(toy_run, "checkpoints", "ckpt-4")
    best = load(toy_run, "best").checkpoint
    assert os.path.dirname(best) == os.path.join(toy_run, "checkpoints", "best")
    assert load(toy_run, 2).checkpoint.endswith("ckpt-2")


def test_an_observation_of_the_wrong_layout_names_the_leaf_and_what_was_expected(dict_run, toy_run):
    policy, flat = load(dict_run, backend="tensorflow"), load(toy_run, backend="tensorflow")
    cases = [
        (flat, np.zeros(3), "observation has shape (3,): expected (2,) for one observation or (B, 2) for a batch of B"),
        (policy, {"position": np.zeros(3), "parity": 0}, "observation['position'] has shape (3,): expected (2,)"),
        (policy, {"position": np.zeros(2)}, "observation is a dict with keys ['position']: expected a dict with "
                                            "keys ['parity', 'position']"),
        (policy, {"position": np.zeros([4, 2]), "parity": 0},
         "observation['position'] is a batch of 4 but observation['parity'] is one observation"),
        (flat, "up", "observation cannot be read as float32"),
    ]
    for target, observation, message in cases:
        with pytest.raises(rlengine.SpecMismatchError) as err:
            target.predict(observation)
        assert message in _one_line(err)
    with pytest.raises(rlengine.SpecMismatchError) as err:
        policy.predict({"position": np.zeros(2), "parity": 0}, state=(1, 2))
    assert _one_line(err).startswith("state is tuple: pass what predict() returned, or None")


def test_a_config_edited_after_training_is_one_line(shift_run, tmp_path):
    edited = str(tmp_path / "edited")
    shutil.copytree(shift_run, edited)
    path = os.path.join(edited, "config.toml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(re.sub(r'transformers = \[[^\]]*\]', "transformers = []", text))
    with pytest.raises(rlengine.RLEngineError) as err:
        load(edited)
    assert "does not fit the run's config.toml" in _one_line(err)


# -- the first-party plugins and the documented examples ----------------------------------------
def run_documented_examples(page: str, run_dir: str, only: Optional[int] = None) -> None:
    """Run every example of ``page`` that loads a policy (or only the ``only``-th), as written, on ``run_dir``
    instead of the one it names."""
    with open(os.path.join(REPO_DIR, page)) as f:
        blocks = [b for b in re.findall(r"```python\n(.*?)```", f.read(), re.S) if "rlengine.load(" in b]
    assert blocks, f"{page} has no example of rlengine.load"
    for block in blocks if only is None else [blocks[only]]:
        code = re.sub(r'"runs/[^"]*"', lambda _: json.dumps(run_dir), block)
        assert code != block, f"{page}: an example names no runs/ directory: {block[:60]!r}"
        namespace: dict = {}
        exec(compile(code, page, "exec"), namespace)  # noqa: S102
        assert isinstance(namespace["policy"], rlengine.Policy)


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    return train_cartpole(tmp_path_factory)


@pytest.mark.first_party
def test_ppo_on_cartpole_acts_in_gymnasium_the_same_on_both_backends(cartpole_run):
    import gymnasium as gym

    fast, reference = rlengine.load(cartpole_run, backend="tflite"), rlengine.load(cartpole_run, backend="tensorflow")
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    state = expected_state = None
    for _ in range(60):
        action, state = fast.predict(obs, state)
        expected, expected_state = reference.predict(obs, expected_state)
        assert action == expected and env.action_space.contains(action)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
            state = expected_state = None
    env.close()


@pytest.mark.first_party
@pytest.mark.parametrize("page", ["README.md"])
def test_the_documented_examples_run(page, cartpole_run):
    run_documented_examples(page, cartpole_run)
