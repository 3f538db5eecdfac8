"""train.jit_compile: each update's loss and gradients compiled by XLA train as they do without it."""

import pytest

from rlengine import hookimpl
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config


def loss_rows(tmp_path, algorithm, jit):
    config = tiny_config(str(tmp_path / f"{algorithm}-{jit}"), algorithm=algorithm, num_env_steps=48,
                         eval_interval=0, jit_compile=jit)
    Engine(config, extra_plugins=[("testing", testing_plugin())]).train()
    return [row for row in MemoryWriter.last.rows if "loss/total" in row]


@pytest.mark.parametrize("algorithm", ["toy", "toy-q"])
def test_compiled_updates_learn_what_plain_ones_do(tmp_path, algorithm):
    plain, compiled = loss_rows(tmp_path, algorithm, False), loss_rows(tmp_path, algorithm, True)
    assert len(plain) == len(compiled) > 1
    for a, b in zip(plain, compiled):  # same seed, same data: the same losses, up to XLA's rounding
        assert b["loss/total"] == pytest.approx(a["loss/total"], rel=1e-4, abs=1e-6)
        assert b["train/skipped_updates"] == 0


class Compiled:
    """Records whether the off-policy iteration's graph holds a function XLA must compile."""

    seen = None

    @hookimpl
    def rlengine_train_end(self, run, error):
        pipeline = run.pipeline
        graph_def = pipeline.iterate_in_graph.get_concrete_function(
            pipeline.carry, pipeline.warming_up[False], pipeline.num_updates).graph.as_graph_def()
        nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
        Compiled.seen = any(n.attr["_XlaMustCompile"].b for n in nodes)


@pytest.mark.parametrize("jit", [False, True])
def test_the_switch_is_what_puts_an_xla_cluster_in_the_graph(tmp_path, jit):
    config = tiny_config(str(tmp_path / "run"), algorithm="toy-q", num_env_steps=16, eval_interval=0,
                         jit_compile=jit)
    Engine(config, extra_plugins=[("testing", testing_plugin()), ("compiled", Compiled())]).train()
    assert Compiled.seen is jit
