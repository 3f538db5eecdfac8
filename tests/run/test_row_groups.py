"""Episode statistics per group of rows (an environment's ``row_groups``) and outcome rates."""

import numpy as np
import pytest

from rlengine.api.data import StepType
from rlengine.errors import PluginError
from rlengine.run.episodes import EpisodeStats
from rlengine.run.groups import RowGroups

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


class Rows:
    """What :meth:`RowGroups.of` reads of an environment: its ids, and what it declares."""

    env_id = "rows"

    def __init__(self, first_env_id, groups, outcomes=False):
        self.num_envs = len(groups)
        self.copy_ids = np.arange(first_env_id, first_env_id + self.num_envs)
        self.row_groups, self.episode_outcomes = groups, outcomes


def test_each_episode_counts_in_its_rows_group_across_environments():
    """Two environments (env threads) of rows 0-1 and 2-3; ``a`` plays rows 0 and 2, ``b`` rows 1 and 3."""
    stats = EpisodeStats(4, RowGroups.of([Rows(0, ["a", "b"]), Rows(2, ["a", "b"])], 4))
    step_type = np.array([[MID, MID, MID, MID], [LAST, MID, LAST, LAST], [FIRST, LAST, FIRST, FIRST]])
    reward = np.array([[1.0, 10.0, 2.0, 20.0], [1.0, 10.0, 4.0, 20.0], [5.0, 10.0, 5.0, 5.0]])
    stats.add(step_type, reward)
    metrics = stats.pop()
    # a: rows 0 and 2 end with 2 and 6; b: row 3 ends with 40, row 1 with 30
    assert metrics["train/a/episode_return"] == 4.0 and metrics["train/b/episode_return"] == 35.0
    assert metrics["train/episode_return"] == pytest.approx((2 + 6 + 40 + 30) / 4)
    assert not any("rate" in key for key in metrics)


def test_outcomes_are_the_signs_of_the_last_rewards():
    stats = EpisodeStats(3, RowGroups.of([Rows(0, ["p0", "p1", "p0"], outcomes=True)], 3))
    stats.add(np.array([[MID, MID, MID], [LAST, LAST, LAST]]), np.array([[-5.0, 0.0, 0.0], [1.0, 0.0, -1.0]]))
    metrics = stats.pop()
    assert (metrics["train/win_rate"], metrics["train/draw_rate"], metrics["train/loss_rate"]) == (
        pytest.approx(1 / 3), pytest.approx(1 / 3), pytest.approx(1 / 3))  # the last reward, not the return (-4)
    assert (metrics["train/p0/win_rate"], metrics["train/p0/loss_rate"], metrics["train/p1/draw_rate"]) == (0.5, 0.5, 1)


def test_a_row_may_count_in_several_groups():
    """Rows 0 and 1 meet opponent ``x`` in seats ``p0`` and ``p1``, row 2 meets ``y`` in seat ``p0``."""
    groups = [("p0", "vs_x", "vs_x/p0"), ("p1", "vs_x", "vs_x/p1"), ("p0", "vs_y", "vs_y/p0")]
    stats = EpisodeStats(3, RowGroups.of([Rows(0, groups, outcomes=True)], 3))
    stats.add(np.array([[LAST, LAST, LAST]]), np.array([[1.0, -1.0, -1.0]]))
    metrics = stats.pop()
    assert (metrics["train/vs_x/win_rate"], metrics["train/vs_x/loss_rate"], metrics["train/vs_y/loss_rate"]) == (
        0.5, 0.5, 1.0)
    assert (metrics["train/p0/win_rate"], metrics["train/vs_x/p0/win_rate"], metrics["train/vs_x/p1/win_rate"]) == (
        0.5, 1.0, 0.0)
    assert metrics["train/vs_x/episode_return"] == 0.0 and metrics["train/vs_y/p0/episode_return"] == -1.0


def test_environments_that_declare_nothing_add_nothing():
    assert RowGroups.of([object()], 2) is None
    stats = EpisodeStats(1, None)
    stats.add(np.array([[LAST]]), np.array([[1.0]]))
    assert set(stats.pop()) == {"train/episode_return", "train/episode_length", "train/episodes"}


@pytest.mark.parametrize("groups", [["a"], ["a", 3], "ab", ["a", ""], ["a", ()], ["a", ("b", "")]])
def test_row_groups_that_do_not_name_every_row_are_refused_naming_the_environment(groups):
    env = Rows(0, ["a", "b"])
    env.row_groups = groups
    with pytest.raises(PluginError, match=r"for 'rows': row_groups must be a list of num_envs = 2 non-empty names"):
        RowGroups.of([env], 2)
