"""Frame-efficient replay: frame-stacked leaves stored one frame per row, the stacks rebuilt when read.

A tiny numpy "frame stack env" makes the rows: the frame of copy ``e`` at
time ``t`` is a counter unique to ``(e, t)``, and a row's stacked observation
holds the frames of times ``max(t - (K-1) + j, episode start)``, slots before
the episode's start padded with its first frame. A buffer given
``frame_stacks`` must return exactly what a plain buffer returns for the
same rows and the same random seed.
"""

import types

import numpy as np
import pytest
import tensorflow as tf

from rlengine.api import seeding
from rlengine.api.data import Experience, StepType
from rlengine.api.environment import FrameStack
from rlengine.collect.faults import GuardedEnvironment
from rlengine.errors import PluginError
from rlengine.learn.replay.buffer import ReplayBuffer
from rlengine.learn.replay.frames import replay_frame_stacks
from rlengine.testing.kit import CountingEnv

K = 4
NUM_ENVS, PER_ENV, LENGTH = 3, 20, 3
SPEC = {
    "env_id": tf.TensorSpec([], tf.int32),
    "observation": {
        "pixels": tf.TensorSpec([2, 3, K], tf.int32),  # K frames along the last axis, one channel each
        "rows": tf.TensorSpec([2 * K, 3], tf.float32),  # K frames along axis 0, two rows each
        "vec": tf.TensorSpec([2], tf.float32),
    },
    "reward": tf.TensorSpec([], tf.float32),
    "step_type": tf.TensorSpec([], tf.int32),
}
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def frame_stacks():
    ids = tf.nest.pack_sequence_as(SPEC, list(range(len(tf.nest.flatten(SPEC)))))
    stacks = [None] * len(tf.nest.flatten(SPEC))
    stacks[ids["observation"]["pixels"]] = (-1, K)
    stacks[ids["observation"]["rows"]] = (0, K)
    return stacks


def frame_id(e, t):
    return 1000 * e + t + 1


def episode_step_types(length, rng, forced_start):
    """Episodes of 2..7 rows (FIRST, MID..., LAST) over ``length`` rows, one beginning at ``forced_start``."""
    types = []
    while len(types) < length:
        now, n = len(types), int(rng.integers(2, 8))
        if now < forced_start < now + n:
            n = forced_start - now
        elif now + n == forced_start - 1:  # an episode of one row cannot end before forced_start
            n += 1
        types += [FIRST] + [MID] * (n - 2) + [LAST]
    return np.array(types[:length], np.int32)


def stacked_ids(e, step_types, oldest=0):
    """``[T, K]`` frame ids of each row's stack; ``oldest`` > 0 clamps as a wrapped ring must."""
    out, start = [], 0
    for t, step in enumerate(step_types):
        if step == FIRST or (t > 0 and step_types[t - 1] == LAST):
            start = t
        out.append([frame_id(e, max(t - (K - 1) + j, start, oldest)) for j in range(K)])
    return np.array(out, np.int64)


def make_rows(envs, step_types, ids):
    """The row nest of copies ``envs`` with ``step_types``, whose stacks hold frames ``ids`` ``[N, K]``."""
    ids = np.asarray(ids, np.int64).reshape(-1, K)
    cells = np.arange(6)
    pixels = (ids[:, None, :] * 10 + cells[None, :, None]).reshape(-1, 2, 3, K)
    rows = (ids[:, :, None] * 10 + cells[None, None, :]).reshape(-1, 2 * K, 3)
    newest = ids[:, -1].astype(np.float32)
    return {"env_id": tf.constant(envs, tf.int32),
            "observation": {"pixels": tf.constant(pixels, tf.int32), "rows": tf.constant(rows, tf.float32),
                            "vec": tf.constant(np.stack([newest, -newest], 1))},
            "reward": tf.constant(newest), "step_type": tf.constant(step_types, tf.int32)}


class FrameStackEnvs:
    """The trajectories of every copy, fed to buffers by a schedule of adds (rows time-major per add)."""

    def __init__(self, schedule, seed, oldest_first=True):
        rng = np.random.default_rng(seed)
        self.schedule = schedule
        self.lengths = np.zeros(NUM_ENVS, np.int64)
        for envs in schedule:
            np.add.at(self.lengths, envs, 1)
        assert (self.lengths > PER_ENV + K).all()  # every ring wrapped
        # Starting an episode at each ring's oldest row keeps every held stack rebuildable exactly.
        forced = self.lengths - PER_ENV if oldest_first else np.full(NUM_ENVS, -1)
        self.step_types = [episode_step_types(n, rng, f) for n, f in zip(self.lengths, forced)]
        self.ids = [stacked_ids(e, s) for e, s in enumerate(self.step_types)]

    def feed(self, *adds):
        written = np.zeros(NUM_ENVS, np.int64)
        for envs in self.schedule:
            times = []
            for e in envs:
                times.append(written[e])
                written[e] += 1
            ids = [self.ids[e][t] for e, t in zip(envs, times)]
            rows = make_rows(envs, [self.step_types[e][t] for e, t in zip(envs, times)], ids)
            for add in adds:
                add(rows)


def uneven_schedule(seed, num_adds=30):
    """Adds of 1-3 steps of all copies or of some, rows of a step one per copy (as unrolls are flattened)."""
    rng = np.random.default_rng(seed)
    schedule = []
    for _ in range(num_adds):
        envs = list(range(NUM_ENVS)) if rng.random() < 0.5 else sorted(rng.choice(NUM_ENVS, 2, replace=False))
        schedule.append([e for _ in range(int(rng.integers(1, 4))) for e in envs])
    return schedule


def even_schedule(num_adds=15, steps=2):
    return [list(range(NUM_ENVS)) * steps for _ in range(num_adds)]


def buffers(prioritized=False):
    kwargs = dict(sequence_length=LENGTH, prioritized=prioritized)
    return (ReplayBuffer(SPEC, NUM_ENVS, NUM_ENVS * PER_ENV, **kwargs),
            ReplayBuffer(SPEC, NUM_ENVS, NUM_ENVS * PER_ENV, frame_stacks=frame_stacks(), **kwargs))


def flat_sample(buffer, sample, seed):
    seeding.reset(seed)
    drawn = sample(buffer)
    return drawn, [drawn.indices.numpy(), drawn.weights.numpy(), *[x.numpy() for x in tf.nest.flatten(drawn.experience)]]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("prioritized", [False, True], ids=["uniform", "prioritized"])
def test_frame_stacked_buffer_samples_exactly_as_a_plain_one(prioritized, mode):
    plain, stacked = buffers(prioritized)
    wrap = (lambda f: tf.function(f, autograph=False, reduce_retracing=True)) if mode == "graph" else (lambda f: f)
    envs = FrameStackEnvs(uneven_schedule(seed=1), seed=2)
    envs.feed(wrap(plain.add), wrap(stacked.add))
    pixels = tf.nest.pack_sequence_as(SPEC, stacked._storage)["observation"]["pixels"]
    assert pixels.shape == [NUM_ENVS, PER_ENV, 2, 3, 1]  # one frame per row is what is kept

    sample = {b: wrap(lambda b=b: b.sample(64)) for b in (plain, stacked)}
    for draw in range(3):
        drawn, expected = flat_sample(plain, lambda b: sample[b](), seed=draw)
        _, got = flat_sample(stacked, lambda b: sample[b](), seed=draw)
        assert_same(expected, got)
        if prioritized:  # the same new priorities on both: the next draws follow them
            priorities = tf.cast(drawn.indices % 7, tf.float32)
            plain.update_priorities(drawn.indices, priorities)
            stacked.update_priorities(drawn.indices, priorities)
        steps = drawn.experience["step_type"].numpy()
        ids = drawn.experience["observation"]["pixels"].numpy()[:, :, 0, 0, :] // 10
    # the draws did cross episodes and held padded stacks, so the rebuilding was put to the test
    assert (steps[:, 1:] == FIRST).any() and (ids[:, :, 0] == ids[:, :, 1]).any()


def test_gather_all_matches_a_plain_buffer():
    plain, stacked = buffers()
    FrameStackEnvs(even_schedule(), seed=3).feed(plain.add, stacked.add)
    assert_same(tf.nest.flatten(plain.gather_all()), tf.nest.flatten(stacked.gather_all()))


def test_stacks_never_reach_past_the_oldest_held_row():
    """A ring that wrapped mid-episode pads with its oldest row's frame (its older ones are overwritten)."""
    plain, stacked = buffers()
    envs = FrameStackEnvs(even_schedule(), seed=4, oldest_first=False)
    envs.feed(plain.add, stacked.add)
    got = stacked.gather_all()["observation"]["pixels"].numpy()[..., 0, 0, :] // 10  # [env, row, K] frame ids
    true = plain.gather_all()["observation"]["pixels"].numpy()[..., 0, 0, :] // 10
    for e in range(NUM_ENVS):
        oldest = int(envs.lengths[e]) - PER_ENV
        expected = stacked_ids(e, envs.step_types[e], oldest)[oldest:]
        np.testing.assert_array_equal(got[e], expected)
        assert (got[e, K - 1:] == true[e, K - 1:]).all()  # at most K - 1 rows per ring differ from the truth
    assert (got != true).any()  # some ring did wrap mid-episode


def test_an_episode_cut_by_a_restart_is_not_reached_into():
    """After ``mark_newest_rows_last`` the next rows start an episode even without their FIRST row."""
    buffer = ReplayBuffer(SPEC, 1, 8, sequence_length=1, frame_stacks=frame_stacks())
    buffer.add(make_rows([0] * 3, [FIRST, MID, MID], [[1, 1, 1, 1], [1, 1, 1, 2], [1, 1, 2, 3]]))
    buffer.mark_newest_rows_last()  # the env restarted; its FIRST row (frame 4) was dropped with the unroll
    buffer.add(make_rows([0] * 2, [MID, MID], [[4, 4, 4, 5], [4, 4, 5, 6]]))
    got = buffer.gather_all()["observation"]["pixels"]
    np.testing.assert_array_equal(got.numpy()[0, :, 0, 0, :] // 10,
                                  [[1, 1, 1, 1], [1, 1, 1, 2], [1, 1, 2, 3], [5, 5, 5, 5], [5, 5, 5, 6]])


ATARI = Experience(
    step_type=tf.TensorSpec([], tf.int32), reward=tf.TensorSpec([], tf.float32),
    discount=tf.TensorSpec([], tf.float32), observation=tf.TensorSpec([84, 84, 4], tf.uint8),
    prev_action=tf.TensorSpec([], tf.int32), env_id=tf.TensorSpec([], tf.int32),
    action=tf.TensorSpec([], tf.int32), rollout_info=(), state=())
ATARI_STACKS = [None, None, None, (-1, 4), None, None, None]
SMALL_LEAVES = 6 * 4  # step_type, reward, discount, prev_action, env_id, action


def test_bytes_needed_counts_one_frame_per_row():
    rows = 1_000_000
    with_stacks = ReplayBuffer.bytes_needed(ATARI, 8, rows, frame_stacks=ATARI_STACKS)
    without = ReplayBuffer.bytes_needed(ATARI, 8, rows)
    assert with_stacks == rows * (84 * 84 + SMALL_LEAVES) + 8 * 8  # + the heads
    assert without == rows * (4 * 84 * 84 + SMALL_LEAVES) + 8 * 8
    small = ReplayBuffer(ATARI, 2, 16, frame_stacks=ATARI_STACKS, prioritized=True)  # what it says is what it takes
    held = sum(v.shape.num_elements() * v.dtype.size for v in small.variables)
    assert held == ReplayBuffer.bytes_needed(ATARI, 2, 16, prioritized=True, frame_stacks=ATARI_STACKS)


@pytest.mark.parametrize("prioritized", [False, True], ids=["uniform", "prioritized"])
def test_checkpoint_keeps_one_frame_per_row_and_resumes_bit_for_bit(tmp_path, prioritized):
    saved = buffers(prioritized)[1]
    FrameStackEnvs(uneven_schedule(seed=5), seed=6).feed(saved.add)
    path = tf.train.Checkpoint(buffer=saved).save(str(tmp_path / "ckpt"))
    shapes = dict(tf.train.list_variables(path))
    assert [NUM_ENVS, PER_ENV, 2, 3, 1] in shapes.values()  # the kept frames, not the stacks
    assert not any(shape[2:] == [2, 3, K] for shape in shapes.values())
    restored = buffers(prioritized)[1]
    FrameStackEnvs(uneven_schedule(seed=7), seed=8).feed(restored.add)  # what it held must not leak through
    tf.train.Checkpoint(buffer=restored).restore(path).assert_consumed()
    for a, b in zip(saved._storage, restored._storage):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    draws = [flat_sample(b, lambda b: b.sample(64), seed=9)[1] for b in (saved, restored)]
    assert_same(*draws)


def run_specs(raw_observation, observation):
    experience = Experience(*(tf.TensorSpec([], tf.int32),) * 3, observation, *(tf.TensorSpec([], tf.int32),) * 3,
                            (), ())
    return types.SimpleNamespace(raw_time_step=types.SimpleNamespace(observation=raw_observation),
                                 experience=experience)


def test_declared_stacks_apply_to_the_leaves_the_transformers_left_alone():
    raw = {"frames": tf.TensorSpec([84, 84, 4], tf.uint8), "rgb": tf.TensorSpec([8, 8, 12], tf.uint8),
           "vector": tf.TensorSpec([3], tf.float32)}
    declared = {"frames": FrameStack(-1, 4), "rgb": FrameStack(2, 4), "vector": None}
    resized = dict(raw, rgb=tf.TensorSpec([8, 8, 12], tf.float32))  # e.g. scaled to [0, 1] by a transformer
    # flattened Experience: step_type, reward, discount, frames, rgb, vector, prev_action, env_id, action
    assert replay_frame_stacks(declared, run_specs(raw, raw), "atari") == [None] * 3 + [(-1, 4), (2, 4)] + [None] * 4
    assert replay_frame_stacks(declared, run_specs(raw, resized), "atari") == [None] * 3 + [(-1, 4)] + [None] * 5
    assert replay_frame_stacks(declared, run_specs(raw, {"vector": raw["vector"]}), "atari") is None
    assert replay_frame_stacks(None, run_specs(raw, raw), "atari") is None
    with pytest.raises(PluginError, match="environment 'atari': stacked_frames()"):
        replay_frame_stacks({"frames": FrameStack(-1, 4)}, run_specs(raw, raw), "atari")
    with pytest.raises(PluginError, match="multiple of frames"):
        replay_frame_stacks(dict(declared, frames=FrameStack(-1, 3)), run_specs(raw, raw), "atari")


class StackingEnv(CountingEnv):
    def stacked_frames(self):
        return FrameStack(0, 2)


def test_guarded_environment_forwards_its_stack_declaration():
    env = GuardedEnvironment(lambda seed: StackingEnv("stacking", 2, seed), "environment 'stacking'", 0)
    try:
        assert env.stacked_frames() == FrameStack(0, 2)
    finally:
        env.close()
