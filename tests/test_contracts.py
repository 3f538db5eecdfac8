"""Hook contracts: every hook is documented with its real signature and has a test of its own.

Convention: the test of hook ``rlengine_<name>`` is a test function under
``tests/`` whose name contains ``<name>_hook`` (``test_train_start_hook_...``).
Each such test calls the hook the way the core does, at the documented
moment, and checks the arguments it gets and what is done with its return.
"""

import functools
import os
import re

import attrs
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from devtools.docgen import HOOKS_PAGE, hook_signature
from rlengine import ObservationTransformer, SummaryWriter, hookimpl
from rlengine.api.specs import RunSpecs
from rlengine.collect.converters import Converters
from rlengine.errors import ConfigError, RegistryError
from rlengine.plugin import hookspecs
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components
from rlengine.run.engine import Engine
from rlengine.testing import CountingEnv, ToyAlgorithm, testing_plugin, tiny_config

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


# -- the hook reference and the per-hook tests -----------------------------------------------
def documented_signatures() -> dict[str, str]:
    """Hook name -> the signature in the first code block of its section in docs/hooks.md."""
    with open(HOOKS_PAGE) as f:
        page = f.read()
    return dict(re.findall(r"^## (\w+)\n\n```python\n(.+?)\n```", page, flags=re.MULTILINE))


@pytest.mark.parametrize("hook", hookspecs.hook_names())
def test_hook_is_in_the_reference_with_its_exact_signature(hook):
    documented = documented_signatures()
    assert hook in documented, f"{hook} is missing from docs/hooks.md: run python -m devtools.docgen"
    assert documented[hook] == hook_signature(hook), (
        f"docs/hooks.md documents {documented[hook]!r} but the spec is {hook_signature(hook)!r}")


def test_reference_documents_no_hook_that_does_not_exist():
    assert sorted(documented_signatures()) == sorted(hookspecs.hook_names())


_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)", re.MULTILINE)


@functools.cache
def _test_function_names() -> tuple[str, ...]:
    # A regex, not ast.parse: Python 3.11.7 keeps the AST constructor's recursion depth in state
    # shared by threads, so ast.parse racing a compile in another thread (autograph parses source)
    # raised "AST constructor recursion depth mismatch" in CI once.
    names = []
    for folder, _, files in os.walk(TESTS_DIR):
        for file in files:
            if file.startswith("test_") and file.endswith(".py"):
                with open(os.path.join(folder, file)) as f:
                    names += _TEST_DEF.findall(f.read())
    return tuple(names)


@pytest.mark.parametrize("hook", hookspecs.hook_names())
def test_hook_has_a_test_of_its_own(hook):
    wanted = hook.removeprefix("rlengine_") + "_hook"
    assert any(wanted in name for name in _test_function_names()), (
        f"{hook} has no test of its own: add a test under tests/ named test_{wanted}_...")


# -- registration hooks ----------------------------------------------------------------------
def _engine(raw, *extra):
    return Engine(raw, extra_plugins=[("testing", testing_plugin()), *extra])


def _components(engine, tmp_path):
    return build_components(engine.config, engine.plugins, str(tmp_path), writers=False)


@attrs.define
class ScaledToyConfig:
    scale: int = attrs.field(default=1, validator=attrs.validators.gt(0))


class ScaledToy(ToyAlgorithm):
    config_class = ScaledToyConfig


class RegistersAlgorithm:
    def __init__(self):
        self.calls = 0

    @hookimpl
    def rlengine_register_algorithms(self, register):
        self.calls += 1
        register("scaled-toy", ScaledToy)
        return "ignored"


def test_register_algorithms_hook_names_train_algorithm_and_its_section(tmp_path):
    plugin = RegistersAlgorithm()
    engine = _engine({**tiny_config(algorithm="scaled-toy"), "scaled-toy": {"scale": 3}}, ("mine", plugin))
    assert plugin.calls == 1  # once, when the plugin manager is built
    entry = engine.plugins.registries.algorithms.get("scaled-toy")
    assert (entry.obj, entry.plugin) == (ScaledToy, "mine")
    parts = _components(engine, tmp_path)
    parts.close()
    assert isinstance(parts.algorithm, ScaledToy) and parts.algorithm.config == ScaledToyConfig(3)
    with pytest.raises(ConfigError, match=r"\[scaled-toy\].*scale"):
        _engine({**tiny_config(algorithm="scaled-toy"), "scaled-toy": {"scale": 0}}, ("mine", RegistersAlgorithm()))


class NamedCounting(CountingEnv):
    made: list = []  # env_id of each instance (the core may wrap environments, so record here)

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config)
        NamedCounting.made.append(env_id)


class RegistersEnvironment:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("named-counting", NamedCounting)


def test_register_environments_hook_selects_by_name_and_as_provider(tmp_path):
    NamedCounting.made = []
    _components(_engine(tiny_config(env="named-counting"), ("mine", RegistersEnvironment())), tmp_path).close()
    assert set(NamedCounting.made) == {"named-counting"}  # training and evaluation copies
    NamedCounting.made = []
    _components(_engine(tiny_config(env="Other-v0", env_provider="named-counting"),
                        ("mine", RegistersEnvironment())), tmp_path).close()
    assert set(NamedCounting.made) == {"Other-v0"}  # an unregistered id goes to the provider
    NamedCounting.made = []
    _components(_engine(tiny_config(env="named-counting/Task-v0", env_provider="absent"),
                        ("mine", RegistersEnvironment())), tmp_path).close()
    assert set(NamedCounting.made) == {"named-counting/Task-v0"}  # name/task goes to name, id and all
    with pytest.raises(RegistryError, match="'absent'"):  # a prefix nobody registered is no provider
        _components(_engine(tiny_config(env="other/Task-v0", env_provider="absent"),
                            ("mine", RegistersEnvironment())), tmp_path)


@attrs.define
class ScaleConfig:
    factor: float = 2.0


class Scale(ObservationTransformer):
    config_class = ScaleConfig

    def transform(self, observation, step_type, state):
        return observation * self.config.factor, state


class RegistersTransformer:
    @hookimpl
    def rlengine_register_transformers(self, register):
        register("scale", Scale)


def test_register_transformers_hook_puts_the_class_in_the_chain(tmp_path):
    raw = {**tiny_config(transformers=["scale", "scale"]), "scale": {"factor": 3.0}}
    parts = _components(_engine(raw, ("mine", RegistersTransformer())), tmp_path)
    parts.close()
    assert [type(t) for t in parts.chain.transformers] == [Scale, Scale]
    raw_step = tf.nest.map_structure(tf.convert_to_tensor, CountingEnv("c", 2, 0, first_env_id=1).reset())
    step, _ = parts.chain.transform(raw_step, parts.chain.initial_state(2))
    assert step.observation.numpy().tolist() == [[0.0, 9.0], [0.0, 18.0]]  # env ids 1, 2, scaled twice by 3


class RowsWriter(SummaryWriter):
    made: list = []

    def __init__(self, root_dir, config, total_env_steps=0):
        super().__init__(root_dir, config, total_env_steps)
        self.rows, self.closed = [], False
        RowsWriter.made.append(self)

    def write(self, metrics):
        self.rows.append(dict(metrics))

    def close(self):
        self.closed = True


class RegistersWriter:
    @hookimpl
    def rlengine_register_writers(self, register):
        register("rows", RowsWriter)


def test_register_writers_hook_makes_the_writer_of_train_writers(tmp_path):
    RowsWriter.made = []
    result = _engine(tiny_config(str(tmp_path), writers=["rows"]), ("mine", RegistersWriter())).train()
    (writer,) = RowsWriter.made
    assert (writer.root_dir, writer.total_env_steps, writer.closed) == (result.root_dir, 32, True)
    assert [r["iteration"] for r in writer.rows if "eval/average_return" not in r] == [1, 2, 3, 4]


class RegistersGamma:
    @hookimpl
    def rlengine_register_distributions(self, register):
        register("gamma", tfp.distributions.Gamma,
                 lambda d: {"concentration": d.concentration, "rate": d.rate},
                 lambda p: tfp.distributions.Gamma(p["concentration"], p["rate"]))


def test_register_distributions_hook_lets_the_core_store_the_distribution():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("mine", RegistersGamma())])
    assert plugins.registries.distributions.get("gamma").plugin == "mine"
    converters = Converters(plugins.registries.distributions)
    dist = tfp.distributions.Gamma(tf.constant([1.5, 2.0]), tf.constant([0.5, 1.0]))
    spec = converters.spec_of(dist)
    rebuilt = converters.from_params(converters.to_params(dist), spec)
    assert isinstance(rebuilt, tfp.distributions.Gamma)
    assert rebuilt.concentration.numpy().tolist() == [1.5, 2.0] and rebuilt.rate.numpy().tolist() == [0.5, 1.0]


# -- lifecycle hooks (rlengine_configure: tests/config/test_config.py) ------------------------------
class Seen:
    """Records what each lifecycle hook is given, at the moment it is called."""

    def __init__(self):
        self.starts, self.iterations, self.evaluations, self.checkpoints, self.ends = [], [], [], [], []

    @hookimpl
    def rlengine_train_start(self, run):
        self.starts.append((run, run.iteration, run.env_steps))
        return "ignored"

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.iterations.append((iteration, dict(metrics), run.env_steps))

    @hookimpl
    def rlengine_evaluation_end(self, run, iteration, metrics):
        self.evaluations.append((iteration, dict(metrics)))

    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        # Completely written: it can be read back right now.
        self.checkpoints.append((iteration, path, dict(tf.train.list_variables(path))))

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.ends.append(error)


def _train(tmp_path, **train):
    seen = Seen()
    engine = _engine(tiny_config(str(tmp_path), **train), ("seen", seen))
    return engine, engine.train(), seen


def test_train_start_hook_sees_the_built_run_before_the_first_iteration(tmp_path):
    engine, result, seen = _train(tmp_path)
    ((run, iteration, env_steps),) = seen.starts
    assert (iteration, env_steps) == (0, 0)
    assert run.config is engine.config and run.root_dir == result.root_dir
    assert os.path.exists(os.path.join(run.root_dir, "config.toml"))
    assert isinstance(run.specs, RunSpecs) and isinstance(run.algorithm, ToyAlgorithm)
    assert run.algorithm is run.internals.algorithm and run.environments[0].env_id == "counting"
    assert result.iterations == 4  # the ignored return changed nothing


def test_iteration_end_hook_gets_each_iterations_metrics(tmp_path):
    _, result, seen = _train(tmp_path)
    assert [i for i, _, _ in seen.iterations] == [1, 2, 3, 4]
    for iteration, metrics, env_steps in seen.iterations:
        assert metrics["iteration"] == iteration
        assert metrics["env_steps"] == env_steps == 8 * iteration  # 2 copies x 4 steps
        assert {"wall_time", "loss/total", "time/collect", "time/update"} <= set(metrics)
    assert result.env_steps == 32


def test_evaluation_end_hook_gets_the_evaluation_metrics(tmp_path):
    _, result, seen = _train(tmp_path)
    assert [i for i, _ in seen.evaluations] == [2, 4]
    for _, metrics in seen.evaluations:
        assert {"eval/average_return", "eval/std_return", "eval/average_length"} <= set(metrics)
    assert seen.evaluations[-1][1]["eval/average_return"] == result.eval_return


def test_checkpoint_saved_hook_is_called_once_the_checkpoint_is_on_disk(tmp_path):
    _, _, seen = _train(tmp_path, checkpoint_interval=3)
    assert [i for i, *_ in seen.checkpoints] == [3, 4]
    for iteration, path, variables in seen.checkpoints:
        assert path.startswith(str(tmp_path)) and str(iteration) in os.path.basename(path)
        assert any("algorithm" in name for name in variables)


def test_train_end_hook_gets_none_after_a_successful_run(tmp_path):
    _, _, seen = _train(tmp_path)
    assert seen.ends == [None]


class FailsAtTwo:
    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if iteration == 2:
            raise RuntimeError("fails at two")


def test_train_end_hook_gets_the_exception_that_ended_the_run(tmp_path):
    seen = Seen()
    engine = _engine(tiny_config(str(tmp_path)), ("seen", seen), ("fails", FailsAtTwo()))
    with pytest.raises(Exception, match="fails at two") as raised:
        engine.train()
    assert seen.ends == [raised.value]
    assert [i for i, *_ in seen.iterations] == [1]  # iteration 2's hook call stopped at the failing plugin
