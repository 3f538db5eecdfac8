"""An environment whose config class has a ``run_dir`` field is given the run's directory (API 1.11)."""

import os

import attrs

import rlengine
from rlengine import hookimpl
from rlengine.testing import CountingEnv, testing_plugin, tiny_config


@attrs.define
class RunDirConfig:
    episode_length: int = 4
    run_dir: str = ""
    evaluation: bool = False


class RunDirEnv(CountingEnv):
    """``counting`` that remembers the config of every copy made."""

    config_class = RunDirConfig
    configs: list = []

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config)
        RunDirEnv.configs.append(self.config)


class _Registers:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("run-dir", RunDirEnv)


def test_training_and_evaluation_copies_get_the_run_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    RunDirEnv.configs = []
    engine = rlengine.Engine(tiny_config("runs/r", env="run-dir"),
                             extra_plugins=[("testing", testing_plugin()), ("run-dir", _Registers())])
    engine.train()
    wanted = os.path.abspath("runs/r")
    assert {c.evaluation for c in RunDirEnv.configs} == {False, True}
    assert [c.run_dir for c in RunDirEnv.configs] == [wanted] * len(RunDirEnv.configs)
