"""The replay buffer: which sequences it may return, how often, and what it keeps.

Rows carry their own provenance: ``obs = [env, counter, 0]`` and
``step_type = counter`` (rows written so far by that copy), so a sampled
sequence shows by itself whether it stays in one copy and in time order.
"""

import numpy as np
import pytest
import tensorflow as tf

from rlengine.learn.replay.buffer import ReplayBuffer
from rlengine.learn.replay.sumtree import SumTree, next_pow2

SPEC = {
    "obs": tf.TensorSpec([3], tf.float32),
    "step_type": tf.TensorSpec([], tf.int32),
    "env_id": tf.TensorSpec([], tf.int32),
}


def make_rows(envs, counters):
    envs = np.asarray(envs, np.int32)
    counters = np.asarray(counters, np.int32)
    obs = np.stack([envs, counters, np.zeros_like(envs)], axis=1).astype(np.float32)
    return {"obs": tf.constant(obs), "step_type": tf.constant(counters), "env_id": tf.constant(envs)}


class Filler:
    """Adds rows to a buffer and remembers how many each copy wrote."""

    def __init__(self, buffer, add=None):
        self.buffer = buffer
        self.add_fn = add or buffer.add
        self.written = np.zeros(buffer.num_envs, np.int64)

    def add(self, envs):
        envs = list(envs)
        counters = []
        for e in envs:
            counters.append(self.written[e])
            self.written[e] += 1
        self.add_fn(make_rows(envs, counters))

    def steps(self, n, envs=None):
        for _ in range(n):
            self.add(range(self.buffer.num_envs) if envs is None else envs)


def functions(buffer, mode, batch_size):
    """``add`` and ``sample`` either eager or wrapped as the engine wraps its graphs."""
    sample = lambda: buffer.sample(batch_size)  # noqa: E731
    if mode == "eager":
        return buffer.add, sample
    return tf.function(buffer.add, autograph=False), tf.function(sample, autograph=False)


def check_sequences(sample, buffer, written):
    """Every sequence: one copy, consecutive counters, a valid start, index matching the start."""
    obs = sample.experience["obs"].numpy()
    counters = sample.experience["step_type"].numpy()
    envs = sample.experience["env_id"].numpy()
    per_env, length = buffer.rows_per_env, buffer.sequence_length
    for seq_obs, seq_counter, seq_env, index in zip(obs, counters, envs, sample.indices.numpy()):
        env = seq_env[0]
        assert (seq_env == env).all() and (seq_obs[:, 0] == env).all(), "sequence mixes copies"
        np.testing.assert_array_equal(np.diff(seq_counter), np.ones(length - 1))
        start = seq_counter[0]
        assert max(written[env] - per_env, 0) <= start <= written[env] - length, "start outside the valid window"
        assert index == env * per_env + start % per_env


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("prioritized", [False, True])
def test_sequences_stay_in_one_copy_and_never_cross_the_head(mode, prioritized):
    buffer = ReplayBuffer(SPEC, num_envs=3, capacity=15, sequence_length=3, prioritized=prioritized)
    add, sample = functions(buffer, mode, 64)
    filler = Filler(buffer, add)
    filler.steps(13)  # wraps every ring twice
    filler.steps(2, envs=[0])  # B < num_envs: only copy 0 moves on
    for _ in range(10):
        drawn = sample()
        check_sequences(drawn, buffer, filler.written)
        newest = {(e, (filler.written[e] - k) % 5) for e in range(3) for k in (1, 2)}
        starts = {(i // 5, i % 5) for i in drawn.indices.numpy()}
        assert not starts & newest, "one of the newest L-1 positions was used as a start"


def test_uniform_sampling_covers_every_valid_start_and_nothing_else():
    tf.random.set_seed(1)
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=12, sequence_length=2)
    filler = Filler(buffer)
    filler.steps(9)  # per copy: rows 3..8 held, starts 3..7 valid
    counts = {}
    for _ in range(20):
        drawn = buffer.sample(100)
        for env, start in zip(drawn.experience["env_id"].numpy()[:, 0], drawn.experience["step_type"].numpy()[:, 0]):
            counts[(env, start)] = counts.get((env, start), 0) + 1
    assert set(counts) == {(e, s) for e in range(2) for s in range(3, 8)}
    assert min(counts.values()) > 2000 / 10 * 0.6  # 10 starts, each ~200 draws
    np.testing.assert_array_equal(buffer.sample(8).weights.numpy(), np.ones(8))


def test_one_add_may_hold_several_rows_per_copy_in_time_order():
    one_by_one = ReplayBuffer(SPEC, num_envs=2, capacity=10, sequence_length=2)
    together = ReplayBuffer(SPEC, num_envs=2, capacity=10, sequence_length=2)
    Filler(one_by_one).steps(8)  # 5 per ring: wraps
    # Two [T=4, B=2] unrolls flattened time-major: row t * 2 + b.
    together.add(make_rows(np.tile([0, 1], 4), np.repeat(np.arange(4), 2)))
    together.add(make_rows(np.tile([0, 1], 4), np.repeat(np.arange(4, 8), 2)))
    for a, b in zip(tf.nest.flatten(one_by_one.gather_all()), tf.nest.flatten(together.gather_all())):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="rows_per_env"):
        together.add(make_rows([0] * 6, range(6)))


def test_bad_env_id_is_refused():
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_envs=2"):
        buffer.add(make_rows([2], [0]))


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("prioritized", [False, True])
def test_sampling_too_early_names_the_settings(mode, prioritized):
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=3, prioritized=prioritized)
    add, sample = functions(buffer, mode, 4)
    Filler(buffer, add).steps(2)
    assert not bool(buffer.can_sample())
    with pytest.raises(tf.errors.InvalidArgumentError, match="initial_collect_steps") as err:
        sample()
    assert "mini_batch_length=3" in str(err.value)
    Filler(buffer, add).add([1])  # copy 1 now has 3 rows: enough
    assert bool(buffer.can_sample())
    assert (sample().experience["env_id"].numpy() == 1).all()


def test_capacity_below_one_sequence_per_copy_is_refused():
    with pytest.raises(ValueError, match="capacity=5"):
        ReplayBuffer(SPEC, num_envs=3, capacity=5, sequence_length=2)


def tree_leaves(buffer):
    """The priority of every sequence start, by flat id."""
    return buffer._tree.leaves.numpy()


def assert_sums_consistent(tree):
    """Every block sum matches its leaves, and every parent its two children."""
    leaves, nodes = tree.leaves.numpy(), tree.nodes.numpy()
    capacity = tree.block_capacity
    assert (leaves[tree.num_items:] == 0).all() and (nodes[capacity + tree.num_blocks:] == 0).all()
    block_sums = leaves.reshape(tree.num_blocks, tree.block_size).sum(axis=1)
    np.testing.assert_allclose(nodes[capacity:capacity + tree.num_blocks], block_sums, rtol=1e-5, atol=1e-6)
    parents = np.arange(1, capacity)
    np.testing.assert_allclose(nodes[parents], nodes[2 * parents] + nodes[2 * parents + 1], rtol=1e-5, atol=1e-6)


def assert_tree_consistent(buffer):
    assert_sums_consistent(buffer._tree)


def test_prioritized_frequencies_follow_priorities():
    tf.random.set_seed(2)
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=2, prioritized=True, priority_alpha=1.0)
    Filler(buffer).steps(4)  # per copy starts 0..2 valid (positions 0..2)
    ids = np.array([0, 1, 2, 4, 5, 6])
    draw = tf.function(lambda: buffer.sample(60).indices, autograph=False)

    def frequencies_match(priorities):
        buffer.update_priorities(tf.constant(ids), tf.constant(priorities, tf.float32))
        drawn = np.concatenate([draw().numpy() for _ in range(100)])
        observed = np.array([(drawn == i).sum() for i in ids])
        assert observed.sum() == len(drawn), "an invalid start was drawn"
        expected = len(drawn) * np.asarray(priorities) / np.sum(priorities)
        chi2 = ((observed - expected) ** 2 / expected).sum()
        assert chi2 < 20.5, (observed, expected)  # 99.9% quantile, 5 degrees of freedom

    frequencies_match([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    frequencies_match([6.0, 1.0, 1.0, 1.0, 1.0, 2.0])
    assert_tree_consistent(buffer)


def test_importance_weights_for_a_hand_example():
    buffer = ReplayBuffer(SPEC, num_envs=1, capacity=4, sequence_length=1, prioritized=True, priority_alpha=1.0)
    Filler(buffer).steps(4)
    buffer.update_priorities(tf.constant([0, 1, 2, 3]), tf.constant([1.0, 2.0, 3.0, 4.0]))
    # Total mass 10 in 10 strata of width 1: ids drawn exactly 1, 2, 3 and 4 times.
    drawn = buffer.sample(10, beta=0.5)
    indices = drawn.indices.numpy()
    np.testing.assert_array_equal(np.bincount(indices, minlength=4), [1, 2, 3, 4])
    # (N * P(i)) ** -beta = (4 * p / 10) ** -0.5, divided by the largest (p = 1).
    hand = {0: 1.0, 1: 0.5 ** 0.5, 2: 3.0 ** -0.5, 3: 0.5}
    np.testing.assert_allclose(drawn.weights.numpy(), [hand[i] for i in indices], rtol=1e-5)


def test_new_starts_get_the_max_priority_and_invalid_ones_stay_zero():
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=3, prioritized=True, priority_alpha=1.0)
    filler = Filler(buffer)
    filler.steps(6)  # per copy rows 2..5 held; starts 2, 3 valid; newest two positions (0, 1) are not
    buffer.update_priorities(tf.constant([2, 3, 6, 7]), tf.constant([5.0, 1.0, 1.0, 1.0]))
    # Try to give every start, valid or not, a priority: the invalid ones must ignore it.
    buffer.update_priorities(tf.range(8), tf.fill([8], 7.0))
    leaves = tree_leaves(buffer)[:8]
    np.testing.assert_array_equal(leaves[[0, 1, 4, 5]], 0.0)
    assert leaves[[2, 3, 6, 7]].min() > 6.9
    sampled = buffer.sample(8).indices.numpy()
    filler.steps(1)  # overwrites position 2 (row 2, a start) and validates start 4 (position 0)
    leaves = tree_leaves(buffer)[:8]
    np.testing.assert_array_equal(leaves[[1, 2, 5, 6]], 0.0)  # newest two positions: 1 and 2
    np.testing.assert_allclose(leaves[[0, 4]], 7.0 + 1e-6, rtol=1e-5)  # new start: the max priority so far
    buffer.update_priorities(tf.constant(sampled), tf.fill([8], 9.0))
    leaves = tree_leaves(buffer)[:8]
    np.testing.assert_array_equal(leaves[[1, 2, 5, 6]], 0.0)
    for _ in range(20):
        check_sequences(buffer.sample(32), buffer, filler.written)
    assert_tree_consistent(buffer)


def test_duplicate_ids_in_one_update_keep_the_sums_right():
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=16, sequence_length=2, prioritized=True, priority_alpha=1.0)
    Filler(buffer).steps(8)
    ids = tf.constant([3, 3, 9, 3, 9, 0, 9])
    buffer.update_priorities(ids, tf.constant([1.0, 5.0, 2.0, 3.0, 8.0, 4.0, 6.0]))
    assert_tree_consistent(buffer)
    leaves = tree_leaves(buffer)
    assert round(float(leaves[3])) in (1, 5, 3)
    assert round(float(leaves[9])) in (2, 8, 6)
    np.testing.assert_allclose(float(buffer._tree.total()), leaves.sum(), rtol=1e-6)


def test_tree_descent_never_ends_on_a_zero_leaf():
    # Rounding can leave a query at or above a node's sum; it must still land on mass.
    tree = SumTree(6)
    tree.set(tf.constant([0, 1, 2, 3, 4, 5], tf.int64), tf.constant([0.0, 2.0, 0.0, 0.0, 1.0, 0.0]))
    found = tree.find(tf.constant([0.0, 1.99, 2.0, 2.5, 3.0, 3.5])).numpy()
    np.testing.assert_array_equal(found, [1, 1, 4, 4, 4, 4])


def test_sample_and_update_inside_a_graph_loop():
    # As a learner uses it: several sample -> update rounds in one tf.while_loop.
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=16, sequence_length=2, prioritized=True)
    filler = Filler(buffer)
    filler.steps(10)

    def rounds():
        def body(i, drawn):
            sample = buffer.sample(8)
            buffer.update_priorities(sample.indices, tf.cast(sample.experience["step_type"][:, 0], tf.float32))
            return i + 1, drawn + tf.reduce_sum(sample.indices)

        return tf.while_loop(lambda i, _: i < 5, body, (tf.constant(0), tf.constant(0, tf.int64)))[1]

    tf.function(rounds, autograph=False)()
    assert_tree_consistent(buffer)
    check_sequences(buffer.sample(32), buffer, filler.written)


def test_checkpoint_round_trip(tmp_path):
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=2, prioritized=True)
    Filler(buffer).steps(5)
    buffer.update_priorities(tf.constant([1, 5]), tf.constant([3.0, 9.0]))
    path = tf.train.Checkpoint(buffer=buffer).save(str(tmp_path / "ckpt"))
    restored = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=2, prioritized=True)
    tf.train.Checkpoint(buffer=restored).restore(path).assert_consumed()
    for a, b in zip(tf.nest.flatten(buffer.gather_all()), tf.nest.flatten(restored.gather_all())):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(tree_leaves(buffer), tree_leaves(restored))
    np.testing.assert_array_equal(buffer._tree.nodes.numpy(), restored._tree.nodes.numpy())
    assert int(restored.num_rows()) == 8
    assert float(restored._max_priority) == float(buffer._max_priority)


def test_clear_forgets_everything():
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=2, prioritized=True)
    Filler(buffer).steps(5)
    buffer.clear()
    assert int(buffer.num_rows()) == 0 and not bool(buffer.can_sample())
    assert float(buffer._tree.total()) == 0.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="initial_collect_steps"):
        buffer.sample(2)
    filler = Filler(buffer)
    filler.steps(3)
    check_sequences(buffer.sample(16), buffer, filler.written)


def test_gather_all_is_in_time_order_per_copy():
    buffer = ReplayBuffer(SPEC, num_envs=3, capacity=12, sequence_length=2)
    filler = Filler(buffer)
    filler.steps(3)
    np.testing.assert_array_equal(buffer.gather_all()["step_type"].numpy(), np.tile(np.arange(3), (3, 1)))
    filler.steps(7)  # 10 rows per copy, 4 held: 6..9, ring wrapped
    everything = buffer.gather_all()
    np.testing.assert_array_equal(everything["step_type"].numpy(), np.tile(np.arange(6, 10), (3, 1)))
    np.testing.assert_array_equal(everything["env_id"].numpy(), np.repeat(np.arange(3)[:, None], 4, axis=1))
    uneven = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=2)
    Filler(uneven).steps(2, envs=[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of rows"):
        uneven.gather_all()


def variable_bytes(buffer):
    return sum(v.shape.num_elements() * v.dtype.size for v in buffer.variables)


def test_memory_is_the_rows_plus_small_change():
    row_bytes = 3 * 4 + 4 + 4
    uniform = ReplayBuffer(SPEC, num_envs=4, capacity=100_000, sequence_length=2)
    raw = uniform.capacity * row_bytes
    assert variable_bytes(uniform) / raw <= 1.001
    prioritized = ReplayBuffer(SPEC, num_envs=4, capacity=100_000, sequence_length=2, prioritized=True)
    tree = 2 * next_pow2(prioritized.capacity) * 4
    assert variable_bytes(prioritized) <= raw * 1.001 + tree


@pytest.mark.parametrize("block_size", [1, 2, 3, 8])
def test_tree_descent_never_ends_on_a_zero_leaf_whatever_the_block_size(block_size):
    tree = SumTree(6, block_size=block_size)
    tree.set(tf.constant([0, 1, 2, 3, 4, 5], tf.int64), tf.constant([0.0, 2.0, 0.0, 0.0, 1.0, 0.0]))
    assert_sums_consistent(tree)
    found = tree.find(tf.constant([0.0, 1.99, 2.0, 2.5, 3.0, 3.5])).numpy()
    np.testing.assert_array_equal(found, [1, 1, 4, 4, 4, 4])


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("num_items, block_size", [(1, 8), (50, 1), (50, 4), (203, 8), (203, 16)])
def test_tree_find_matches_a_cumulative_sum(mode, num_items, block_size):
    rng = np.random.default_rng(num_items + block_size)
    tree = SumTree(num_items, block_size=block_size)
    priorities = (rng.random(num_items) * (rng.random(num_items) > 0.3)).astype(np.float32)
    priorities[-1] = 0.5  # some mass, whatever the draw
    find = tree.find if mode == "eager" else tf.function(tree.find, autograph=False)
    tree.set(tf.range(num_items, dtype=tf.int64), tf.constant(priorities))
    assert_sums_consistent(tree)
    np.testing.assert_allclose(float(tree.total()), priorities.sum(), rtol=1e-5)
    np.testing.assert_array_equal(tree.get(tf.range(num_items, dtype=tf.int64)).numpy(), priorities)
    ends = np.cumsum(priorities.astype(np.float64))
    # Masses well inside an interval (away from float32 rounding at its ends) must find exactly that item.
    inside = ends - priorities / 2
    keep = priorities > 1e-3
    found = find(tf.constant(inside[keep], tf.float32)).numpy()
    np.testing.assert_array_equal(found, np.flatnonzero(keep))
    # Any mass in [0, total], ends included, lands on an item of positive priority.
    masses = np.concatenate([rng.random(300) * ends[-1], [0.0], ends, [ends[-1] * 1.001]]).astype(np.float32)
    assert (priorities[find(tf.constant(masses)).numpy()] > 0).all()


@pytest.mark.parametrize("block_size", [2, 8])
def test_tree_updates_across_blocks_keep_the_sums_exact(block_size):
    rng = np.random.default_rng(block_size)
    tree = SumTree(37, block_size=block_size)
    update = tf.function(tree.set, autograph=False)
    for round_ in range(30):
        ids = rng.integers(0, 37, size=16)  # duplicates included
        values = rng.random(16).astype(np.float32) * (round_ % 3 != 0)  # every third round writes zeros
        (update if round_ % 2 else tree.set)(tf.constant(ids, tf.int64), tf.constant(values))
        assert_sums_consistent(tree)
        leaves = tree.leaves.numpy()
        for i in set(ids):
            assert leaves[i] in values[ids == i]
    np.testing.assert_allclose(float(tree.total()), tree.leaves.numpy().sum(), rtol=1e-5)
    tree.clear()
    assert float(tree.total()) == 0.0 and not tree.leaves.numpy().any()


def test_tree_costs_little_more_than_its_leaves():
    # Pendulum rows are 36 bytes: the whole tree must stay within 20% of a 1,000,000-row buffer.
    tree = SumTree(1_000_000)
    tree_bytes = sum(v.shape.num_elements() * v.dtype.size for v in tree.variables)
    assert tree_bytes <= 4 * (1_000_000 + tree.block_size) + 8 * next_pow2(-(-1_000_000 // tree.block_size))
    assert tree_bytes / (36 * 1_000_000) <= 0.15
    prioritized = ReplayBuffer(SPEC, num_envs=4, capacity=100_000, sequence_length=2, prioritized=True)
    uniform = ReplayBuffer(SPEC, num_envs=4, capacity=100_000, sequence_length=2)
    blocks = -(-prioritized.capacity // tree.block_size)
    tree_bound = 4 * blocks * tree.block_size + 8 * next_pow2(blocks)
    assert variable_bytes(prioritized) - variable_bytes(uniform) <= 4 + tree_bound  # + max_priority
    assert tree_bound <= 1.34 * 4 * prioritized.capacity  # vs 2 * next_pow2(capacity) floats before: 2.62x


def test_held_rows_are_a_copys_rows_oldest_first_after_its_ring_wrapped():
    buffer = ReplayBuffer(SPEC, num_envs=2, capacity=8, sequence_length=2)  # 4 rows per copy
    filler = Filler(buffer)
    filler.add([0, 0, 0, 1])
    filler.add([0, 0, 0])  # copy 0 has written 6 rows (its ring wrapped), copy 1 one
    np.testing.assert_array_equal(buffer.held_rows(0)["step_type"].numpy(), [2, 3, 4, 5])
    np.testing.assert_array_equal(buffer.held_rows(1)["obs"].numpy(), [[1, 0, 0]])
