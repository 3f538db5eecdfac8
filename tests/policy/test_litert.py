"""The converted steps of rlengine.load: LiteRT runs them (TensorFlow's interpreter where LiteRT is missing),
the sampling step converts with its noise as an input, and both are cached beside the checkpoint."""

import os
import shutil
import sys

import numpy as np
import pytest

from rlengine.policy.cache import SUFFIX, cache_path
from tests.policy.runs import load

OBSERVATIONS = np.random.default_rng(0).normal(size=[6, 3, 2]).astype(np.float32)


def copied(run_dir: str, tmp_path) -> str:
    """A copy of a module's run, whose cache files this test may write and spoil."""
    copy = str(tmp_path / "run")
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns(f"*{SUFFIX}"))
    return copy


def steps_of(policy, observations=OBSERVATIONS, **predict) -> list:
    """Actions and states of ``policy`` along ``observations`` (batches of 3), the state carried."""
    out, state = [], None
    for obs in observations:
        action, state = policy.predict(obs, state, **predict)
        out.append((action, None if state is None else state.flat))
    return out


def assert_same_steps(got: list, expected: list) -> None:
    for (action, state), (expected_action, expected_state) in zip(got, expected):
        np.testing.assert_array_equal(action, expected_action)
        for a, b in zip(state or (), expected_state or ()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- which interpreter ----------------------------------------------------------------------------
def test_the_converted_steps_run_on_litert(shift_run, tmp_path):
    policy = load(copied(shift_run, tmp_path), backend="tflite")
    assert (policy.backend, policy.interpreter, policy.sampling_backend) == ("tflite", "litert", "tflite")
    assert "litert" in repr(policy)
    assert_same_steps(steps_of(policy), steps_of(load(shift_run, backend="tensorflow")))


def test_without_ai_edge_litert_tensorflows_interpreter_runs_them(shift_run, tmp_path, monkeypatch):
    run_dir = copied(shift_run, tmp_path)
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)  # import ai_edge_litert... raises ImportError
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    for _ in range(2):  # converted here, then from the cache
        policy = load(run_dir, backend="tflite")
        assert (policy.backend, policy.interpreter, policy.sampling_backend) == ("tflite", "tf.lite", "tflite")
        assert_same_steps(steps_of(policy), steps_of(load(shift_run, backend="tensorflow")))
    assert policy.algorithm is None  # the second came from the cache


# -- the cache ------------------------------------------------------------------------------------
def test_a_converted_checkpoint_is_cached_and_the_next_load_takes_it(shift_run, tmp_path):
    run_dir = copied(shift_run, tmp_path)
    built = load(run_dir, backend="tflite")
    path = cache_path(built.checkpoint)
    assert os.path.isfile(path) and built.algorithm is not None
    assert [n for n in os.listdir(os.path.dirname(path)) if ".tmp-" in n] == []
    cached = load(run_dir, backend="auto", seed=5)
    assert cached.algorithm is None and cached.transformers is None and cached.checkpoint == built.checkpoint
    assert cached.backend == "tflite" and cached.wait_for_conversion() == "tflite"
    assert_same_steps(steps_of(cached), steps_of(built))
    # sampling: the same converted step and the same NumPy draws, whether built or cached
    assert_same_steps(steps_of(cached, deterministic=False), steps_of(load(run_dir, backend="tflite", seed=5),
                                                                    deterministic=False))
    assert load(run_dir, backend="tensorflow").algorithm is not None  # backend="tensorflow" never takes it


def test_a_stale_or_damaged_cache_is_never_used_and_is_rewritten(shift_run, tmp_path):
    run_dir = copied(shift_run, tmp_path)
    path = cache_path(load(run_dir, backend="tflite").checkpoint)
    with open(os.path.join(run_dir, "config.toml"), "a") as f:
        f.write("# edited after training\n")  # the same config, but not the same file: rebuild
    assert load(run_dir, backend="tflite").algorithm is not None
    assert load(run_dir, backend="tflite").algorithm is None  # rewritten for the file as it is now
    with open(path, "wb") as f:
        f.write(b"not a cache")
    policy = load(run_dir, backend="tflite")
    assert policy.algorithm is not None and policy.backend == "tflite"
    assert_same_steps(steps_of(load(run_dir, backend="tflite")), steps_of(policy))


def test_each_checkpoint_has_its_own_cache_and_those_of_deleted_ones_go(toy_run, tmp_path):
    run_dir = copied(toy_run, tmp_path)
    checkpoints = os.path.join(run_dir, "checkpoints")
    orphan = os.path.join(checkpoints, f"ckpt-999{SUFFIX}")  # of a checkpoint training has since deleted
    with open(orphan, "wb") as f:
        f.write(b"")
    latest, second = load(run_dir, backend="tflite"), load(run_dir, 2, backend="tflite")
    assert os.path.isfile(cache_path(latest.checkpoint)) and os.path.isfile(cache_path(second.checkpoint))
    assert not os.path.exists(orphan)
    assert load(run_dir, 2, backend="tflite").checkpoint == second.checkpoint


def test_a_run_directory_it_cannot_write_to_loads_as_before(toy_run, tmp_path):
    run_dir = copied(toy_run, tmp_path)
    checkpoints = os.path.join(run_dir, "checkpoints")
    os.chmod(checkpoints, 0o555)
    try:
        if os.access(checkpoints, os.W_OK):
            pytest.skip("this user writes to read-only directories (root)")
        policy = load(run_dir, backend="tflite")
        assert policy.backend == "tflite" and not os.path.exists(cache_path(policy.checkpoint))
    finally:
        os.chmod(checkpoints, 0o755)


# -- sampling -------------------------------------------------------------------------------------
def test_converted_sampling_is_reproducible_by_seed_and_draws_as_tensorflow_does(toy_run, tmp_path):
    run_dir = copied(toy_run, tmp_path)
    zeros = np.zeros([20_000, 2], np.float32)
    policy = load(run_dir, backend="tflite", seed=3)
    assert policy.sampling_backend == "tflite"
    sampled, _ = policy.predict(zeros, deterministic=False)
    assert list(load(run_dir, backend="tflite", seed=3).predict(zeros, deterministic=False)[0]) == list(sampled)
    assert list(load(run_dir, backend="tflite", seed=4).predict(zeros, deterministic=False)[0]) != list(sampled)
    reference = load(run_dir, backend="tensorflow", seed=3)
    assert reference.sampling_backend == "tensorflow"
    drawn_by_tensorflow, _ = reference.predict(zeros, deterministic=False)
    p = drawn_by_tensorflow.mean()
    assert 0.05 < p < 0.95  # a policy that still explores: both actions are drawn
    assert abs(sampled.mean() - p) < 5 * np.sqrt(2 * p * (1 - p) / len(zeros))
