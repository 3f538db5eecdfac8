"""Summary rows written every few iterations still count every training episode."""

from rlengine import hookimpl
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config


class IterationMetrics:
    """Records the metrics each ``rlengine_iteration_end`` call gets."""

    def __init__(self):
        self.rows = []

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.rows.append(dict(metrics))


def _episodes(rows):
    return sum(row.get("train/episodes", 0.0) for row in rows)


def _return_sum(rows):
    return sum(row["train/episode_return"] * row["train/episodes"] for row in rows if "train/episodes" in row)


def test_rows_written_every_third_iteration_count_the_episodes_of_the_iterations_between(tmp_path):
    recorder = IterationMetrics()
    config = tiny_config(str(tmp_path), num_env_steps=96, summary_interval=3, eval_interval=0)  # 12 iterations
    Engine(config, extra_plugins=[("testing", testing_plugin()), ("recorder", recorder)]).train()
    written = [row for row in MemoryWriter.last.rows if "time/collect" in row]
    assert [row["iteration"] for row in written] == [1, 3, 6, 9, 12]
    hooked = recorder.rows  # each iteration's own episodes
    assert len(hooked) == 12 and _episodes(hooked) > 0
    written_iterations = {row["iteration"] for row in written}
    assert any("train/episodes" in row for row in hooked if row["iteration"] not in written_iterations)
    assert _episodes(written) == _episodes(hooked)
    assert abs(_return_sum(written) - _return_sum(hooked)) < 1e-6
