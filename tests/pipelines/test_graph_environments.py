"""Graph environments through the engine: the same task as a Python environment gives the same run,
collection and evaluation call no Python per step, and a resumed run continues the episodes."""

import pytest
import tensorflow as tf

from rlengine import GraphEnvironment, StepType, hookimpl
from rlengine.errors import ConfigError, RegistryError
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
from tests.run.test_resume import Interrupted, StopAfterCheckpoint

PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


def _train(config, *plugins):
    extra = [("testing", testing_plugin()), *[(f"p{i}", p) for i, p in enumerate(plugins)]]
    result = Engine(config, extra_plugins=extra).train()
    return result, MemoryWriter.last.rows


def _comparable(rows):
    """The rows without their timings."""
    return [{k: v for k, v in row.items() if "time" not in k and "seconds" not in k and "per_second" not in k
             and not k.startswith("startup/") and "per_sec" not in k} for row in rows]


@pytest.mark.parametrize("algorithm, pipeline", [("toy", "sync"), ("toy-q", "sync"), ("toy", "async")])
def test_a_graph_environment_trains_as_its_python_twin(tmp_path, algorithm, pipeline):
    def run(env):
        config = tiny_config(str(tmp_path / env), env=env, algorithm=algorithm, pipeline=pipeline, num_env_steps=64,
                             seed=3, num_envs=4 if pipeline == "async" else 2)  # a copy for each env thread
        return _train(config)

    python_result, python_rows = run("counting")
    graph_result, graph_rows = run("graph-counting")
    assert graph_result.env_steps == python_result.env_steps == 64
    assert len(graph_result.eval_history) == len(python_result.eval_history) > 0
    if pipeline == "sync":  # the async pipeline's threads interleave differently from run to run
        assert _comparable(graph_rows) == _comparable(python_rows)
        assert [r for _, _, r in graph_result.eval_history] == [r for _, _, r in python_result.eval_history]


class Functions:
    """Keeps the run's collection and evaluation functions at its first iteration."""

    def __init__(self):
        self.functions = []

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if not self.functions:
            pipeline = run.internals.pipeline  # the whole iteration's function where it has one, else collection's
            iteration = getattr(pipeline, "iterate_in_graph", None) or pipeline.collector.run
            self.functions = [iteration.function, run.internals.evaluator.evaluate.function]


def _op_types(function):
    """The op types of every graph ``function`` traced, loop bodies included."""
    ops = set()
    for concrete in function._list_all_concrete_functions():  # those traced so far: no public listing
        graph_def = concrete.graph.as_graph_def()
        ops.update(node.op for node in graph_def.node)
        for library_function in graph_def.library.function:
            ops.update(node.op for node in library_function.node_def)
    assert ops, "nothing was traced"
    return ops


@pytest.mark.parametrize("algorithm", ["toy", "toy-q"])
@pytest.mark.parametrize("env, calls_python", [("graph-counting", False), ("counting", True)])
def test_an_iteration_and_an_evaluation_of_a_graph_environment_call_no_python(tmp_path, env, calls_python, algorithm):
    functions = Functions()
    _train(tiny_config(str(tmp_path), env=env, algorithm=algorithm, num_env_steps=16), functions)
    for function in functions.functions:
        assert bool(_op_types(function) & PYTHON_OPS) == calls_python, function


class StepTypes:
    """Records the step types of every collected unroll (rows 1..T: row 0 is the previous unroll's last)."""

    def __init__(self):
        self.rows = []

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.rows.append(run.internals.pipeline.carry.experience.step_type.numpy().tolist())


def test_an_interrupted_graph_environment_run_continues_its_episodes(tmp_path):
    """Episodes of 5 steps cut by unrolls of 4: a resumed run must go on mid-episode, as the straight run does."""
    def config(name):
        raw = tiny_config(str(tmp_path / name), env="graph-counting", num_env_steps=64, checkpoint_interval=1,
                          eval_interval=0, seed=1)
        raw["graph-counting"] = {"episode_length": 5}
        return raw

    straight = StepTypes()
    _train(config("straight"), straight)
    with pytest.raises(Exception) as err:
        _train(config("resumed"), StopAfterCheckpoint(3))
    assert "Interrupted" in repr(err.value) or isinstance(err.value.__cause__, Interrupted)
    resumed = StepTypes()
    _, resumed_rows = _train(config("resumed"), resumed)
    assert resumed.rows == straight.rows[3:]
    assert resumed.rows[0] == [StepType.MID] * 2  # mid-episode: the cut did not restart the episodes
    assert StepType.FIRST in sum(resumed.rows, [])
    assert _comparable(resumed_rows) == _comparable(MemoryWriter.last.rows)


def test_the_graph_environments_state_travels_in_the_carry(tmp_path):
    seen = {}

    class Carry:
        @hookimpl
        def rlengine_iteration_end(self, run, iteration, metrics):
            seen.setdefault("env_state", run.internals.pipeline.carry.env_state)

    _train(tiny_config(str(tmp_path), env="graph-counting", num_env_steps=16), Carry())
    assert set(seen["env_state"]) == {"t"} and seen["env_state"]["t"].dtype == tf.int32


class NotAGraphEnvironment:
    pass


class Registers:
    def __init__(self, **registered):
        self.registered = registered

    @hookimpl
    def rlengine_register_graph_environments(self, register):
        for env_id, cls in self.registered.items():
            register(env_id.replace("_", "/"), cls)


def test_register_graph_environments_hook_names_the_env_id_a_run_trains_on(tmp_path, capfd):
    from rlengine.testing.graph_counting import GraphCountingEnv

    class Renamed(GraphCountingEnv):
        pass

    result, _ = _train(tiny_config(str(tmp_path / "run"), env="mine/counting", num_env_steps=16),
                       Registers(mine_counting=Renamed))
    assert result.env_steps == 16 and issubclass(Renamed, GraphEnvironment)
    # the plugin is left out, saying why; the id then goes to the provider, which does not know it either
    with pytest.raises((ConfigError, RegistryError)):  # Gymnasium's unknown id; without the gym plugin, its name
        _train(tiny_config(str(tmp_path / "bad"), env="bad/env", num_env_steps=16),
               Registers(bad_env=NotAGraphEnvironment))
    assert "which is not a subclass of rlengine.GraphEnvironment" in capfd.readouterr().err


class Collector:
    """Keeps the run's collector and the function its iterations ran, at its first iteration."""

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        pipeline = run.internals.pipeline
        self.collector = pipeline.collector
        self.iteration = (getattr(pipeline, "iterate_in_graph", None) or pipeline.collector.run).function


def _xla_compiled(function) -> bool:
    """Whether a graph ``function`` traced calls a function XLA must compile."""
    for concrete in function._list_all_concrete_functions():
        graph_def = concrete.graph.as_graph_def()
        nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
        if any(node.attr["_XlaMustCompile"].b for node in nodes) or any(
                f.attr["_XlaMustCompile"].b for f in graph_def.library.function):
            return True
    return False


@pytest.mark.parametrize("env, compiled", [("graph-counting", True), ("counting", False)])
def test_jit_compile_unroll_compiles_a_graph_environments_unroll_only(tmp_path, env, compiled):
    kept = Collector()
    result, _ = _train(tiny_config(str(tmp_path), env=env, num_env_steps=32, jit_compile_unroll=True), kept)
    assert result.env_steps == 32 and result.eval_history
    assert kept.collector.jit_compile == compiled
    assert _xla_compiled(kept.iteration) == compiled
