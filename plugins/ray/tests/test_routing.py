"""Every unroll comes from the runner and copies it says, once, acted on by the version it reports."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these


def _run(components, iterations: int) -> tuple[list, dict]:
    """Iterate, keeping each iteration and the probe value published with each version."""
    pipeline = components.pipeline
    published: dict = {}
    original = pipeline._publish

    def recording_publish():
        published[pipeline.version] = float(components.algorithm.probe.numpy())
        original()

    pipeline._publish = recording_publish
    pipeline.start()
    out, env_steps = [], 0
    try:
        for _ in range(iterations):
            out.append(pipeline.iterate(env_steps))
            env_steps += out[-1].env_steps
        return out, published
    finally:
        pipeline.stop()


@pytest.mark.parametrize("algorithm", ["probe", "probe-q"])
def test_unrolls_are_routed_and_acted_by_their_version(local_ray, components_of, algorithm):
    components = components_of(algorithm=algorithm)
    pipeline = components.pipeline
    received = []
    original = pipeline._receive
    pipeline._receive = lambda: received.append(original()) or received[-1]
    iterations, published = _run(components, 12)

    for unroll in received:
        first = 2 * unroll.runner  # runner r holds copies 2r, 2r + 1
        experience = tf.nest.pack_sequence_as(components.specs.experience, unroll.experience)
        assert (experience.env_id == [first, first + 1]).all(), unroll.runner
        probes = experience.rollout_info["probe"]
        # every row acted by the weights of the version the unroll reports (row 0 too: acted on in the
        # previous unroll, with the version loaded before it, which is at most this one)
        assert (probes[1:] == published[unroll.version]).all(), (unroll.version, probes)
    seen = [(u.incarnation, u.sequence) for u in received]
    assert len(seen) == len(set(seen))  # nothing counted twice
    for incarnation in {u.incarnation for u in received}:  # nothing lost: each runner's unrolls 0, 1, 2, ...
        sequences = [u.sequence for u in received if u.incarnation == incarnation]
        assert sequences == list(range(len(sequences)))
    assert {u.runner for u in received} == {0, 1}
    assert max(published) >= 3  # it trained, so versions advanced
    assert all(i.metrics["ray/runner_restarts"] == 0 for i in iterations)
    if algorithm == "probe":  # on-policy: each iteration trains on one unroll of each runner, side by side
        assert all(np.asarray(i.experience.env_id)[0].tolist() == [0, 1, 2, 3] for i in iterations)
