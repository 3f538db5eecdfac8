"""A pipeline plugin held to its contract where the core meets it: its env layout when the run is built,
what ``iterate`` returns when it first returns; each break is one line naming the pipeline and the rule."""

from __future__ import annotations

import pytest

from rlengine import hookimpl
from rlengine.errors import PluginError
from rlengine.pipelines.sync.pipeline import OnPolicyPipeline
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config


class LayoutFromOne(OnPolicyPipeline):
    """Numbers its copies from 1: copy 0 would never be stepped."""

    @classmethod
    def env_layout(cls, train, config, algorithm_class):
        return [(train.num_envs, 1)]


class IteratesATuple(OnPolicyPipeline):
    """Hands the trainer a tuple where it wants an Iteration."""

    @classmethod
    def create(cls, context, config):
        return cls(context, config)  # the sync pipeline's own create picks its class by the algorithm

    def iterate(self, env_steps):
        step = super().iterate(env_steps)
        return step.experience, step.losses


class Pipelines:
    @hookimpl
    def rlengine_register_pipelines(self, register):
        register("from-one", LayoutFromOne)
        register("tuple", IteratesATuple)


def _engine(tmp_path, pipeline):
    return Engine(tiny_config(str(tmp_path), pipeline=pipeline, writers=[]),
                  extra_plugins=[("testing", testing_plugin()), ("pipelines", Pipelines())])


def test_an_env_layout_that_skips_a_copy_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(PluginError) as info:
        _engine(tmp_path / "run", "from-one")

    message = str(info.value)
    assert "\n" not in message
    assert "pipeline 'from-one'" in message and "LayoutFromOne" in message
    assert "[(2, 1)]" in message and "0..1 once each" in message
    assert not (tmp_path / "run").exists()


def test_an_iterate_that_returns_no_iteration_names_the_pipeline_and_is_not_called_resumable(tmp_path):
    with pytest.raises(PluginError) as info:
        _engine(tmp_path / "run", "tuple").train()

    message = str(info.value)
    assert "pipeline 'tuple'" in message and "iterate() returned tuple, not rlengine.Iteration" in message
    assert not any("resumes it" in note for note in getattr(info.value, "__notes__", []))
