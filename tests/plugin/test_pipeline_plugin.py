"""A pipeline and a command from a third-party package, installed with pip: no core file knows them.

The package's pipeline collects with the public kit only (``rlengine.collect``:
the one unroll loop, the env caller, the two halves of a step) and trains with
the learner the core hands it; its command lists the run's pipelines. Both are
registered lazily, as ``"module:Class"`` strings.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.plugin_packages import pip_install, run_rlengine

SETUP_PY = """
    from setuptools import setup

    setup(
        name="rlengine-twice",
        version="0.3",
        py_modules=["rlengine_twice", "rlengine_twice_pipeline"],
        entry_points={"rlengine": ["twice = rlengine_twice"]},
    )
"""

PLUGIN_MODULE = '''
    """Registers the `twice` pipeline, the `pipelines` command and the testing kit's env and algorithm."""

    import argparse

    import rlengine
    from rlengine import hookimpl

    RLENGINE_API_VERSION = "1.1"


    class ListPipelines(rlengine.Command):
        help = "list the registered pipelines"

        def add_arguments(self, parser: argparse.ArgumentParser) -> None:
            parser.add_argument("--prefix", default="pipelines:")

        def run(self, args: argparse.Namespace) -> int:
            names = args.plugins.registries.pipelines.names()
            print(args.prefix, " ".join(names))
            return 3  # an exit status of its own, passed through by the CLI


    @hookimpl
    def rlengine_register_pipelines(register):
        register("twice", "rlengine_twice_pipeline:TwicePipeline")


    @hookimpl
    def rlengine_register_commands(register):
        register("pipelines", ListPipelines)


    @hookimpl
    def rlengine_register_environments(register):
        register("counting", "rlengine.testing.kit:CountingEnv")


    @hookimpl
    def rlengine_register_algorithms(register):
        register("toy", "rlengine.testing.kit:ToyAlgorithm")
'''

PIPELINE_MODULE = '''
    """Collects two unrolls per iteration and trains on each: the public kit only."""

    import time

    import attrs
    import tensorflow as tf

    import rlengine
    from rlengine.api.data import Experience
    from rlengine.collect.env_caller import EnvCaller
    from rlengine.collect.policy_step import act, observe
    from rlengine.collect.unroll import Carry, unroll


    @attrs.define
    class TwiceConfig:
        unrolls: int = attrs.field(default=2, validator=attrs.validators.gt(0))


    class TwicePipeline(rlengine.Pipeline):
        config_class = TwiceConfig

        def __init__(self, context, config):
            super().__init__(context, config)
            self.env = EnvCaller(context.envs[0], context.specs.raw_time_step)
            self.batch = context.envs[0].batch_size
            self.random = tf.Variable(False, trainable=False)
            self.collect = tf.function(self._collect, autograph=False)
            self.reset = tf.function(self._reset, autograph=False)
            self.carry = None

        def _act(self, raw, transformer_state, policy_state):
            ctx = self.context
            time_step, transformer_state, state = observe(ctx.chain, ctx.algorithm, raw, transformer_state,
                                                          policy_state, self.batch)
            action, next_state, info = act(ctx.algorithm, ctx.converters, ctx.specs, self.random, time_step,
                                           state, self.batch)
            return Carry(Experience(*time_step, action, info, state), transformer_state, next_state), ()

        def _reset(self):
            ctx = self.context
            return self._act(self.env.reset(), ctx.chain.initial_state(self.batch),
                             ctx.algorithm.initial_state(self.batch))[0]

        def _collect(self, carry):
            experience, carry, _ = unroll(self.env.step, self._act, carry, (), self.context.specs,
                                          self.context.config.train.unroll_length, self.batch)
            return experience, carry

        def start(self):
            self.carry = self.reset()

        def iterate(self, env_steps):
            t0 = time.perf_counter()
            for _ in range(self.config.unrolls):
                experience, self.carry = self.collect(self.carry)
                losses = self.context.learner.train(experience)
            steps = self.config.unrolls * self.context.config.train.unroll_length * self.batch
            return rlengine.Iteration(experience, losses, time.perf_counter() - t0, 0.0, env_steps=steps,
                                      metrics={"twice/unrolls": float(self.config.unrolls)})
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    source, target = tmp_path_factory.mktemp("twice-src"), tmp_path_factory.mktemp("twice-site")
    (source / "setup.py").write_text(textwrap.dedent(SETUP_PY))
    (source / "rlengine_twice.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    (source / "rlengine_twice_pipeline.py").write_text(textwrap.dedent(PIPELINE_MODULE))
    pip_install(source, target)
    return target


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.first_party  # reads the rows of the jsonl writer (rlengine-writers)
def test_register_pipelines_hook_trains_with_a_pipeline_from_an_installed_package(site, tmp_path):
    root = tmp_path / "run"
    out = run_rlengine("train", "--set", "train.pipeline=twice", "--set", "twice.unrolls=3",
                       "--set", "train.algorithm=toy", "--set", "train.env=counting", "--set", "train.num_envs=2",
                       "--set", "train.unroll_length=4", "--set", "train.num_env_steps=240",
                       "--set", "train.eval_interval=0", "--set", 'train.writers=["jsonl"]',
                       "--root-dir", str(root), pythonpath=[site], cwd=tmp_path)

    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in (root / "metrics.jsonl").read_text().splitlines()]
    assert [r["env_steps"] for r in rows] == [24 * (i + 1) for i in range(10)]  # 3 unrolls x 4 steps x 2 copies
    assert all(r["twice/unrolls"] == 3.0 for r in rows)
    assert all("loss/total" in r for r in rows)  # every iteration trained
    assert "[twice]" in (root / "config.toml").read_text()


def test_register_commands_hook_adds_a_command_from_an_installed_package(site, tmp_path):
    listed = run_rlengine("pipelines", "--prefix", "have:", pythonpath=[site], cwd=tmp_path)
    helped = run_rlengine("--help", pythonpath=[site], cwd=tmp_path)
    shown = run_rlengine("plugins", "--json", pythonpath=[site], cwd=tmp_path)

    assert listed.returncode == 3, listed.stderr
    prefix, *names = listed.stdout.split()  # other installed pipeline plugins (rlengine-ray) may be listed too
    assert prefix == "have:" and names == sorted(names) and {"async", "sync", "twice"} <= set(names)
    assert "pipelines" in helped.stdout and "list the registered pipelines" in helped.stdout
    twice = next(p for p in json.loads(shown.stdout) if p["name"] == "twice")
    assert twice["distribution"] == "rlengine-twice" and twice["version"] == "0.3"
    assert twice["pipelines"] == ["twice"] and twice["commands"] == ["pipelines"]


def test_an_unknown_pipeline_is_one_line_naming_the_registered_ones(site, tmp_path):
    out = run_rlengine("train", "--set", "train.pipeline=twise", "--set", "train.algorithm=toy", "--set", "train.writers=[]",
                       "--set", "train.env=counting", "--root-dir", str(tmp_path / "run"), pythonpath=[site],
                       cwd=tmp_path)

    assert out.returncode == 2
    line = out.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"rlengine: error: unknown pipeline 'twise'; available: async(, offline)?(, ray)?, sync, twice\. "
                        r"Did you mean 'twice'\?", line), line  # ray: where rlengine-ray is installed too
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize("value, written", [("async", '"async"'), ("sync", '"sync"')])
def test_the_old_driver_key_is_refused_naming_the_key_to_write(value, written):
    from rlengine.config import build_config
    from rlengine.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        build_config({"train": {"driver": value}}, {})

    assert str(info.value) == (f"config key train.driver was renamed to train.pipeline: write "
                               f"train.pipeline = {written} instead")
