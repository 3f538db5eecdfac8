"""The NaN guard: non-finite updates are skipped and counted, K in a row stop the run with
an error naming the culprit, and a checkpoint of non-finite weights is never written."""

import numpy as np
import pytest
import tensorflow as tf

from rlengine.errors import NonFiniteError
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
from rlengine.testing.failing import NaNPlugin

# tiny_config: 2 copies x 4 steps = 8 env steps and one update per iteration; 32 steps = 4 iterations,
# so iteration i (from 1) runs at progress (i - 1) / 4.


def nan_engine(tmp_path, poison="loss", nan_from=0.0, nan_until=2.0, **train):
    config = tiny_config(str(tmp_path / "run"), algorithm="nan-toy", **train)
    config["nan-toy"] = {"poison": poison, "nan_from": nan_from, "nan_until": nan_until}
    return Engine(config, extra_plugins=[("testing", testing_plugin()), ("nan", NaNPlugin())])


@pytest.mark.parametrize("poison, culprit", [
    ("loss", "the total loss"),
    ("term", "loss term 'policy'"),
    ("gradient", "the gradient of 'dense"),
])
def test_k_nonfinite_updates_in_a_row_stop_the_run_naming_the_culprit(tmp_path, poison, culprit):
    engine = nan_engine(tmp_path, poison, num_env_steps=10_000, max_nonfinite_updates=3)
    with pytest.raises(NonFiniteError) as info:
        engine.train()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("3 updates in a row skipped because " + culprit)
    assert "train.max_nonfinite_updates" in message and "learning rate" in message
    assert len(MemoryWriter.last.rows) < 10  # it stopped early, long before the 10_000-step budget


def test_a_short_burst_of_nonfinite_updates_is_skipped_counted_and_survived(tmp_path):
    # poisoned for iterations 1 and 2 only: two skipped updates, then training goes on
    result = nan_engine(tmp_path, "loss", nan_until=0.5, max_nonfinite_updates=3, eval_interval=0).train()
    assert result.env_steps == 32
    skipped = [row["train/skipped_updates"] for row in MemoryWriter.last.rows]
    assert skipped == [1.0, 2.0, 2.0, 2.0]
    assert np.isnan(MemoryWriter.last.rows[0]["loss/total"])
    assert np.isfinite(MemoryWriter.last.rows[-1]["loss/total"])


def test_the_streak_is_read_only_when_the_count_of_skipped_updates_moved(tmp_path, monkeypatch):
    # skipped updates [1, 2, 2, 2]: iterations 1 and 2 moved the count, so only they read the streak (a host
    # round trip each); a healthy iteration costs the guard nothing
    from rlengine.learn.learner import Learner

    reads = []
    check = Learner.check_nonfinite_streak
    monkeypatch.setattr(Learner, "check_nonfinite_streak",
                        lambda self, limit: reads.append(int(self.skipped_updates.numpy())) or check(self, limit))
    nan_engine(tmp_path, "loss", nan_until=0.5, max_nonfinite_updates=3, eval_interval=0).train()
    assert reads == [1, 2]


def test_the_streak_counts_consecutive_updates_only(tmp_path):
    # 2 poisoned iterations with K = 2 stop the run; the same run with K = 3 ends normally
    with pytest.raises(NonFiniteError):
        nan_engine(tmp_path / "a", "gradient", nan_until=0.5, max_nonfinite_updates=2).train()
    assert nan_engine(tmp_path / "b", "gradient", nan_until=0.5, max_nonfinite_updates=3).train().env_steps == 32


def test_a_checkpoint_of_nonfinite_weights_is_never_written(tmp_path, capsys):
    # a weight turns NaN in iteration 3: checkpoints 1 and 2 are written, 3, 4 and the final one are not
    engine = nan_engine(tmp_path, "weights", nan_from=0.5, checkpoint_interval=1, max_nonfinite_updates=100)
    engine.train()
    checkpoint_dir = tmp_path / "run" / "checkpoints"
    latest = tf.train.latest_checkpoint(str(checkpoint_dir))
    assert latest is not None and latest.endswith("ckpt-2")
    reader = tf.train.load_checkpoint(latest)
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.isfinite(value).all(), name
    warnings = [line for line in capsys.readouterr().err.splitlines() if "not written" in line]
    assert len(warnings) == 3  # iterations 3 and 4, and the save at the end
    assert "algorithm/spare" in warnings[0] and "not finite" in warnings[0]


def test_the_limit_is_a_validated_train_key(tmp_path):
    from rlengine.errors import ConfigError

    with pytest.raises(ConfigError, match="max_nonfinite_updates"):
        nan_engine(tmp_path, max_nonfinite_updates=0)
