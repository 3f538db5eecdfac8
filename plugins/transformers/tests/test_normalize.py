import numpy as np
import pytest
import tensorflow as tf
from rlengine_transformers import Normalize, NormalizeConfig

from rlengine import ConfigError, SpecMismatchError


@pytest.fixture
def rng():
    return np.random.default_rng(0)


SPEC = tf.TensorSpec([3], tf.float32, name="obs")
MID = tf.constant([1, 1], tf.int32)


def _stats(t, leaf=0):
    return t.mean[leaf].numpy(), t.var[leaf].numpy(), t.count.numpy()


def test_statistics_match_numpy_over_several_updates(rng):
    t = Normalize(SPEC, NormalizeConfig())
    batches = [
        rng.normal(5.0, 3.0, size=[8, 3]),
        rng.normal(-2.0, 0.5, size=[4, 6, 3]),  # [T, B, ...]: all leading dims are rows
        rng.normal(1.0, 10.0, size=[1, 3]),
    ]
    seen = []
    for batch in batches:
        t.update(tf.constant(batch, tf.float32))
        seen.append(batch.astype(np.float32).reshape(-1, 3))
        rows = np.concatenate(seen).astype(np.float64)
        mean, var, count = _stats(t)
        np.testing.assert_allclose(mean, rows.mean(0), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(var, rows.var(0), rtol=1e-6)
        assert count == len(rows)


def test_empty_batch_changes_nothing():
    t = Normalize(SPEC, NormalizeConfig())
    t.update(tf.zeros([0, 3]))
    np.testing.assert_array_equal(t.var[0].numpy(), np.ones(3))
    t.update(tf.constant([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
    t.update(tf.zeros([0, 3]))
    np.testing.assert_allclose(_stats(t)[0], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(_stats(t)[1], [1.0, 0.0, 1.0])
    assert _stats(t)[2] == 2


def test_transform_standardises_and_is_pure(rng):
    t = Normalize(SPEC, NormalizeConfig())
    data = rng.normal(3.0, 2.0, size=[256, 3]).astype(np.float32)
    t.update(data)
    before = [v.numpy().copy() for v in t.variables]
    out, state = t.transform(tf.constant(data), MID, ())
    assert state == () and out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy().mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.numpy().std(0), 1.0, atol=1e-4)
    for old, var in zip(before, t.variables):
        np.testing.assert_array_equal(old, var.numpy())


def test_clipping_and_constant_features():
    t = Normalize(SPEC, NormalizeConfig(clip=2.0))
    t.update(tf.constant([[0.0, 1.0, 5.0], [0.0, -1.0, 5.0]]))  # third feature is constant
    out, _ = t.transform(tf.constant([[100.0, -100.0, 5.0]]), MID[:1], ())
    np.testing.assert_allclose(out.numpy(), [[2.0, -2.0, 0.0]])


def test_works_inside_tf_function(rng):
    t = Normalize(SPEC, NormalizeConfig())
    update = tf.function(t.update)
    transform = tf.function(lambda x: t.transform(x, MID, ())[0])
    data = rng.normal(size=[2, 16, 3]).astype(np.float32)
    for chunk in data:
        update(tf.constant(chunk))
    np.testing.assert_allclose(t.mean[0].numpy(), data.reshape(-1, 3).mean(0), rtol=1e-5, atol=1e-6)
    eager, _ = t.transform(tf.constant(data[0]), MID, ())
    np.testing.assert_allclose(transform(tf.constant(data[0])).numpy(), eager.numpy(), rtol=1e-6)


def test_nests_only_touch_float_leaves(rng):
    spec = {"pos": tf.TensorSpec([2], tf.float64), "pixels": tf.TensorSpec([2, 2], tf.uint8)}
    t = Normalize(spec, NormalizeConfig())
    assert len(t.mean) == 1 and t.output_spec["pixels"] is spec["pixels"]
    obs = {"pos": tf.constant(rng.normal(4.0, 2.0, [32, 2])), "pixels": tf.ones([32, 2, 2], tf.uint8)}
    t.update(obs)
    out, _ = t.transform(obs, tf.ones([32], tf.int32), ())
    assert out["pos"].dtype == tf.float64 and out["pixels"] is obs["pixels"]
    np.testing.assert_allclose(out["pos"].numpy().mean(0), 0.0, atol=1e-6)


def test_statistics_are_checkpointed(tmp_path):
    t = Normalize(SPEC, NormalizeConfig())
    t.update(tf.constant([[1.0, 2.0, 3.0], [5.0, 6.0, 9.0]]))
    path = tf.train.Checkpoint(t=t).save(str(tmp_path / "ckpt"))
    restored = Normalize(SPEC, NormalizeConfig())
    tf.train.Checkpoint(t=restored).restore(path).assert_consumed()
    for a, b in zip(t.variables, restored.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_errors():
    with pytest.raises(ConfigError, match="image_scale"):
        Normalize(tf.TensorSpec([4], tf.uint8), NormalizeConfig())
    t = Normalize(SPEC, NormalizeConfig())
    with pytest.raises(SpecMismatchError):
        t.update(tf.zeros([4, 5]))
    for kwargs in [{"clip": 0.0}, {"clip": "10"}, {"epsilon": -1.0}, {"clip": True}]:
        with pytest.raises((TypeError, ValueError)):
            NormalizeConfig(**kwargs)
    assert NormalizeConfig(clip=5).clip == 5  # TOML integers are accepted


def test_remote_updates_merge_as_if_seen_here(rng):
    """Two remote copies start from the learner's statistics, each updates on its own rows; merging
    their before/after values gives the statistics of all rows, as remote env runners need."""
    learner = Normalize(SPEC, NormalizeConfig())
    first = rng.normal(3.0, 2.0, size=[16, 3])
    learner.update(tf.constant(first, tf.float32))
    batches = [rng.normal(-1.0, 4.0, size=[8, 3]), rng.normal(7.0, 0.5, size=[5, 3])]
    base = [v.numpy() for v in learner.variables]
    for batch in batches:
        copy = Normalize(SPEC, NormalizeConfig())
        for variable, value in zip(copy.variables, base):
            variable.assign(value)
        copy.update(tf.constant(batch, tf.float32))
        learner.merge_updates(base, [v.numpy() for v in copy.variables])
    rows = np.concatenate([first, *batches]).astype(np.float32).astype(np.float64)
    mean, var, count = _stats(learner)
    np.testing.assert_allclose(mean, rows.mean(0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(var, rows.var(0), rtol=1e-6)
    assert count == len(rows)


def test_an_action_mask_leaf_is_never_normalized():
    import tensorflow as tf
    from rlengine_transformers.normalize import Normalize, NormalizeConfig

    spec = {"action_mask": tf.TensorSpec([3], tf.float32), "obs": tf.TensorSpec([2], tf.float32)}
    normalize = Normalize(spec, NormalizeConfig())
    batch = {"action_mask": tf.constant([[1.0, 0.0, 1.0]] * 4), "obs": tf.random.normal([4, 2]) * 5 + 3}
    normalize.update(batch)
    out, _ = normalize.transform(batch, None, ())
    assert out["action_mask"].numpy().tolist() == [[1.0, 0.0, 1.0]] * 4
    assert abs(float(tf.reduce_mean(out["obs"]))) < 1.0  # the other float leaf is standardised
    assert len(normalize.mean) == 1
