"""The evaluator plays every episode in one graph call, and scores them as a Python loop over steps would."""

import numpy as np
import pytest
import tensorflow as tf

from rlengine.api.data import StepType
from rlengine.collect import stopping
from rlengine.config import build_config
from rlengine.run.build import build_components, config_classes
from rlengine.run.evaluator import Evaluator, episodes_of
from rlengine.testing import CountingEnv, tiny_config


class UnevenEnv(CountingEnv):
    """Copy ``i``'s ``k``-th episode lasts ``2 + i + k`` steps and pays ``t * (i + 1)`` at step ``t``."""

    steps = resets = 0

    def reset(self):
        self.episodes = np.zeros(self.num_envs, np.int64)
        self.steps, self.resets = 0, self.resets + 1
        return super().reset()

    def step(self, action):
        self.steps += 1
        length = 2 + np.arange(self.num_envs) + self.episodes
        restart = self.t >= length
        self.episodes += restart
        self.t = np.where(restart, 0, self.t + 1)
        last = self.t >= 2 + np.arange(self.num_envs) + self.episodes
        step_type = np.where(restart, StepType.FIRST, np.where(last, StepType.LAST, StepType.MID))
        reward = np.where(restart, 0.0, self.t * (np.arange(self.num_envs) + 1.0))
        return self._time_step(step_type, reward, np.where(last, 0.0, 1.0), np.asarray(action))


def expected_scores(copies: int, quota: list) -> list:
    """(return, length) of every episode UnevenEnv plays, copy by copy."""
    out = []
    for i in range(copies):
        for k in range(quota[i]):
            n = 2 + i + k
            out.append((sum(t * (i + 1.0) for t in range(1, n + 1)), n))
    return out


@pytest.fixture
def parts(plugins, tmp_path):
    parts = build_components(build_config(tiny_config(str(tmp_path)), config_classes(plugins)), plugins,
                             str(tmp_path), writers=False)
    yield parts
    parts.close()


@pytest.mark.parametrize("episodes", [7, 3])
def test_every_copy_plays_its_quota_and_the_scores_are_exact(parts, episodes):
    env = UnevenEnv("uneven", 3, seed=0)
    evaluator = Evaluator(env, parts.chain, parts.algorithm, episodes)
    quota = evaluator.quota.tolist()
    assert sum(quota) == episodes
    scores = expected_scores(3, quota)
    returns = np.array([r for r, _ in scores])
    for _ in range(2):  # a second evaluation starts over from reset
        result = evaluator.run()
        assert result["eval/episodes"] == episodes
        assert result["eval/average_return"] == pytest.approx(returns.mean(), rel=1e-12)
        assert result["eval/std_return"] == pytest.approx(returns.std(), rel=1e-12)
        assert result["eval/average_length"] == pytest.approx(np.mean([n for _, n in scores]), rel=1e-12)
    # one graph call: the steps it took are those of the longest copy's episodes, and no more
    assert env.steps == max(sum(2 + i + k + 1 for k in range(q)) for i, q in enumerate(quota)) - 1
    evaluator.close()


def test_a_stop_request_ends_an_evaluation_between_two_steps(parts):
    env = UnevenEnv("uneven", 2, seed=0)
    evaluator = Evaluator(env, parts.chain, parts.algorithm, 10_000)
    stopping.request(15)
    try:
        with pytest.raises(stopping.StopRequested, match="evaluation stopped"):
            evaluator.run()
    finally:
        stopping.clear()
    assert env.resets == env.steps == 0  # the request came first: not one call was made
    evaluator.close()


def test_the_evaluation_traces_once(parts):
    evaluator = parts.evaluator
    evaluator.run()
    evaluator.run()
    assert evaluator.evaluate.function.experimental_get_tracing_count() == 1
    assert isinstance(evaluator.evaluate.function, tf.types.experimental.GenericFunction)


def test_the_recorded_steps_give_each_episode_summed_step_after_step_copy_after_copy():
    rng = np.random.default_rng(1)
    reward = (rng.normal(size=(40, 3)) * 1e3).astype(np.float32)
    live = rng.random((40, 3)) < 0.9
    live[:, 2] = False  # a copy with no episode to play
    ended = live & (rng.random((40, 3)) < 0.2)
    ended[30:, 0] = False  # copy 0's last steps are after its last episode: not in any
    returns, lengths = episodes_of(reward, live, ended)
    expected = []
    for copy in range(3):
        running, length = 0.0, 0
        for t in range(40):
            if live[t, copy]:
                running, length = running + float(reward[t, copy]), length + 1
            if ended[t, copy]:
                expected.append((running, length))
                running, length = 0.0, 0
    assert len(expected) == int(ended.sum()) > 5
    assert returns.tolist() == [r for r, _ in expected]  # the same bits
    assert lengths.tolist() == [n for _, n in expected]
