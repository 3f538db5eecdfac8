"""The off-policy pipeline end to end with the testing kit's ``toy-q`` (no plugin needed)."""

import pytest
import tensorflow as tf

from rlengine import ConfigError, hookimpl
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, ToyQAlgorithm, testing_plugin, tiny_config


class PrioritizedToyQ(ToyQAlgorithm):
    prioritized_replay = True


class StarvedToyQ(ToyQAlgorithm):
    initial_collect_steps = 1  # cannot fill a 2-step sequence in every copy


class Extra:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("toy-q-per", PrioritizedToyQ)
        register("toy-q-starved", StarvedToyQ)


def _engine(tmp_path, **train):
    train.setdefault("num_env_steps", 96)
    return Engine(tiny_config(str(tmp_path), algorithm=train.pop("algorithm", "toy-q"), **train),
                  extra_plugins=[("testing", testing_plugin()), ("extra", Extra())])


@pytest.mark.parametrize("algorithm", ["toy-q", "toy-q-per"])
def test_learns_from_replay(tmp_path, algorithm):
    result = _engine(tmp_path, algorithm=algorithm).train()
    assert result.eval_return == 8.0  # always action 1: 4 steps x reward 2


def test_initial_collection_trains_nothing_then_updates(tmp_path):
    _engine(tmp_path).train()
    rows = [r for r in MemoryWriter.last.rows if "time/collect" in r]
    # 2 copies x 4 steps per iteration: the first iteration (8 steps) is the random warm-up
    assert "loss/total" not in rows[0]
    assert all("loss/total" in r for r in rows[1:])


def test_replay_buffer_is_checkpointed(tmp_path):
    engine = _engine(tmp_path)
    engine.train()
    latest = tf.train.latest_checkpoint(str(tmp_path / "checkpoints"))
    names = [name for name, _ in tf.train.list_variables(latest)]
    assert any(name.startswith("replay/") for name in names)


def test_too_little_initial_collection_names_the_setting(tmp_path):
    engine = _engine(tmp_path, algorithm="toy-q-starved")
    with pytest.raises(ConfigError, match="toy-q-starved.initial_collect_steps = 1 is too small"):
        engine.train()


def test_on_policy_through_replay_gives_the_same_updates_as_the_direct_path(tmp_path):
    def losses(replay):
        Engine(tiny_config(str(tmp_path / str(replay)), algorithm="toy", replay_on_policy=replay, seed=3),
               extra_plugins=[("testing", testing_plugin())]).train()
        return [r["loss/total"] for r in MemoryWriter.last.rows if "loss/total" in r]

    direct, replayed = losses(False), losses(True)
    assert len(direct) == 4 and direct == replayed
