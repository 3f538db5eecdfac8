"""The sync off-policy pipeline: collection, store and updates in one graph call per iteration."""

import numpy as np

from rlengine.config import build_config
from rlengine.run.build import build_components, config_classes
from rlengine.testing import tiny_config


def test_warm_up_then_training_in_one_traced_call(plugins, tmp_path):
    # toy-q: initial_collect_steps = 8, 4 updates an iteration; 2 copies x 2 steps = 4 env steps an iteration
    raw = tiny_config(str(tmp_path), algorithm="toy-q", num_envs=2, unroll_length=2)
    parts = build_components(build_config(raw, config_classes(plugins)), plugins, str(tmp_path), writers=False)
    try:
        pipeline, learner = parts.pipeline, parts.learner
        pipeline.start()
        rows, env_steps, losses = [int(pipeline.replay.num_rows())], 0, []
        for _ in range(5):
            step = pipeline.iterate(env_steps)
            env_steps += 4
            rows.append(int(pipeline.replay.num_rows()))
            losses.append(step.losses)
            assert step.collect_seconds > 0 and step.update_seconds >= 0
        assert np.diff(rows).tolist() == [4] * 5  # rows 1..T of each unroll, every iteration
        assert [bool(x) for x in losses] == [False, False, True, True, True]  # 8 steps of warm-up
        assert all(np.isfinite(float(v)) for x in losses[2:] for v in x.values())
        assert int(learner.skipped_updates.numpy()) == 0
        assert pipeline.iterate_in_graph.experimental_get_tracing_count() == 1  # warm-up and training alike
        pipeline.iterate_in_graph.function = None  # later iterations run the trace without the tf.function
        assert pipeline.iterate(env_steps).losses
    finally:
        parts.close()
