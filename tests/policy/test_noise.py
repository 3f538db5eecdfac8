"""rlengine.policy.noise: the stateless draws of a traced step read uniform noise, and keep their distribution."""

import math
import threading

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from rlengine.api import seeding
from rlengine.policy.noise import NoiseReader, noise_fed

DRAWS = 40_000


def noise_fed_draws(draw, size: int = 4 * DRAWS, seed: int = 0):
    """``draw(seed)`` traced with its draws reading ``size`` uniforms of a seeded NumPy generator; (values, used)."""

    def step(noise):
        reader = NoiseReader(noise)
        with noise_fed(reader):
            value = draw(seeding.seed())
        return value, reader.used

    function = tf.function(step, autograph=False).get_concrete_function(tf.TensorSpec([None], tf.float32))
    noise = np.random.default_rng(seed).random(size, dtype=np.float32)
    value, used = function(tf.constant(noise))
    return value.numpy(), int(used)


def standard_normal_cdf(x):
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_a_normal_draw_reads_two_uniforms_a_value_and_is_standard_normal():
    values, used = noise_fed_draws(lambda seed: tf.random.stateless_normal([DRAWS], seed))
    assert used == 2 * DRAWS and values.dtype == np.float32
    ordered = np.sort(values)
    ks = np.max(np.abs(standard_normal_cdf(ordered) - np.arange(1, DRAWS + 1) / DRAWS))
    assert ks < 1.95 / math.sqrt(DRAWS)  # Kolmogorov-Smirnov at 0.1 %
    shifted, _ = noise_fed_draws(lambda seed: tf.random.stateless_normal([DRAWS], seed, mean=3.0, stddev=0.5))
    np.testing.assert_allclose([shifted.mean(), shifted.std()], [3.0, 0.5], atol=0.02)


def test_uniform_draws_cover_their_range_evenly_floats_and_integers():
    floats, used = noise_fed_draws(lambda seed: tf.random.stateless_uniform([DRAWS], seed, -2.0, 6.0))
    assert used == DRAWS and floats.min() >= -2.0 and floats.max() < 6.0
    assert abs(floats.mean() - 2.0) < 0.05
    ints, _ = noise_fed_draws(lambda seed: tf.random.stateless_uniform([DRAWS], seed, 3, 8, dtype=tf.int32))
    assert ints.dtype == np.int32
    counts = np.bincount(ints - 3, minlength=5)
    assert len(counts) == 5 and np.all(np.abs(counts / DRAWS - 0.2) < 4 * math.sqrt(0.2 * 0.8 / DRAWS))


def test_a_categorical_draw_follows_the_softmax_of_its_logits_and_never_takes_a_masked_action():
    logits = np.log(np.array([[0.1, 0.6, 0.0, 0.3]], np.float32) + 1e-30)
    logits[0, 2] = np.finfo(np.float32).min  # masked, as masking.py does
    rows = np.repeat(logits, DRAWS // 4, axis=0)
    actions, used = noise_fed_draws(lambda seed: tf.random.stateless_categorical(rows, 1, seed, dtype=tf.int32))
    assert used == rows.size and actions.shape == (DRAWS // 4, 1)
    frequencies = np.bincount(actions[:, 0], minlength=4) / len(rows)
    assert frequencies[2] == 0
    np.testing.assert_allclose(frequencies, [0.1, 0.6, 0.0, 0.3], atol=4 * math.sqrt(0.25 / len(rows)))


def test_tensorflow_probability_samples_read_the_noise_too():
    tfd = tfp.distributions
    normal, used = noise_fed_draws(lambda seed: tfd.Normal(tf.fill([DRAWS], 1.0), 2.0).sample(seed=seed))
    assert used == 2 * DRAWS
    np.testing.assert_allclose([normal.mean(), normal.std()], [1.0, 2.0], atol=0.05)
    categorical, _ = noise_fed_draws(
        lambda seed: tfd.Categorical(logits=tf.math.log([[0.25, 0.75]] * 1000)).sample(seed=seed))
    assert abs(categorical.mean() - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 1000)


def test_the_draws_depend_on_the_noise_and_a_full_range_integer_draw_is_refused():
    first, _ = noise_fed_draws(lambda seed: tf.random.stateless_normal([8], seed), seed=1)
    again, _ = noise_fed_draws(lambda seed: tf.random.stateless_normal([8], seed), seed=1)
    other, _ = noise_fed_draws(lambda seed: tf.random.stateless_normal([8], seed), seed=2)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    with pytest.raises(NotImplementedError, match="full-range integer"):
        noise_fed_draws(lambda seed: tf.random.stateless_uniform([2], seed, dtype=tf.int32, minval=None))


def test_while_a_step_traces_another_thread_draws_tensorflows_own():
    seed = tf.constant([1, 2])
    expected = tf.random.stateless_normal([3], seed).numpy()
    seen = []

    def draw(s):
        other = threading.Thread(target=lambda: seen.append(tf.random.stateless_normal([3], seed).numpy()))
        other.start()
        other.join()
        return tf.random.stateless_normal([3], s)

    noise_fed_draws(draw)
    np.testing.assert_array_equal(seen[0], expected)
    np.testing.assert_array_equal(tf.random.stateless_normal([3], seed).numpy(), expected)  # and after it


@pytest.mark.parametrize("stand_in", ["noise_fed", "drawing_from"])
def test_a_policy_tracing_in_one_thread_leaves_a_run_in_another_its_generator(stand_in):
    from rlengine.policy.traced import drawing_from

    seeding.reset(3)
    run_generator = seeding.generator()
    policy_generator = tf.random.Generator.from_seed(9)
    tracing, done, seen = threading.Event(), threading.Event(), {}

    def trace():  # as load() converts its policy to LiteRT in the background
        context = noise_fed(NoiseReader(tf.zeros([8]))) if stand_in == "noise_fed" else drawing_from(policy_generator)
        with context:
            seen["policy"] = seeding.generator()
            tracing.set()
            done.wait(10)

    thread = threading.Thread(target=trace)
    thread.start()
    tracing.wait(10)
    seen["run"] = seeding.generator()  # a run building meanwhile: its checkpoint tracks this generator
    done.set()
    thread.join()
    assert seen["run"] is run_generator and seen["policy"] is not run_generator
    assert seeding.generator() is run_generator
