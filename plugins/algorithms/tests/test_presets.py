"""The shipped presets: one per required (algorithm, env) pair, each a config the real loader takes whole,
with a header naming its RL Zoo source and budget."""

from __future__ import annotations

import pytest
from rlengine_algorithms.presets import preset_files

from rlengine.config import read_toml
from rlengine.plugin.manager import build_plugins
from rlengine.run.engine import Engine

REQUIRED = {f"{algorithm}/{env}" for algorithms, envs in [
    (("ppo", "ac", "dqn"), ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "LunarLander-v3")),
    (("ppo",), ("BipedalWalker-v3", "HalfCheetah-v5")),
    (("sac", "td3"), ("Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3", "BipedalWalker-v3",
                      "HalfCheetah-v5")),
] for algorithm in algorithms for env in envs}
ZOO_FILES = {"ppo": "ppo.yml", "ac": "a2c.yml", "dqn": "dqn.yml", "sac": "sac.yml", "td3": "td3.yml"}
SHIPPED = preset_files()


@pytest.fixture(scope="module")
def plugins():
    built = build_plugins()
    built.raise_failures()
    return built


def test_every_required_pair_has_a_preset():
    assert REQUIRED <= set(SHIPPED), f"missing presets: {sorted(REQUIRED - set(SHIPPED))}"


def test_the_algorithms_plugin_registers_every_shipped_preset(plugins):
    assert plugins.registered_by("algorithms")["presets"] == sorted(SHIPPED), (
        "rlengine_algorithms/plugin.py needs a rlengine_register_presets hookimpl calling presets.register_presets")


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_preset_builds_through_the_loader_with_every_key_it_sets(name, plugins):
    algorithm, _, env = name.partition("/")

    engine = Engine(None, [f'train.algorithm="{algorithm}"', f'train.env="{env}"'], plugins=plugins)

    assert engine.preset.name == name and engine.preset.plugin == "algorithms"
    config = engine.config
    for section, table in read_toml(str(SHIPPED[name])).items():
        built = config.train if section == "train" else config.sections[section]
        assert {key: getattr(built, key) for key in table} == table, f"[{section}] of {SHIPPED[name].name}"
    if algorithm in ("sac", "td3", "dqn"):  # what the run checks when it makes the replay buffer
        cfg, own = config.train, config.sections[algorithm]
        assert own.initial_collect_steps >= cfg.num_envs * own.mini_batch_length
        assert own.replay_capacity >= cfg.num_envs * max(own.mini_batch_length, cfg.unroll_length)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_preset_header_names_its_zoo_source_budget_and_what_was_not_translated(name):
    algorithm = name.partition("/")[0]
    text = SHIPPED[name].read_text()
    budget = read_toml(str(SHIPPED[name]))["train"]["num_env_steps"]

    header = text.split("\n\n", 1)[0]
    assert header.startswith(f"# RL Zoo (DLR-RM/rl-baselines3-zoo) hyperparams/{ZOO_FILES[algorithm]}, key ")
    assert f"# Budget: {budget:,} env steps, the Zoo's n_timesteps." in header
    assert ("# Not translated, or only in part" in header) != ("# Every Zoo key is translated." in header)
    assert max(len(line) for line in text.splitlines()) <= 120


def test_a_plain_default_run_lists_the_sections_of_the_plugins_it_uses(plugins):
    overrides = ['train.algorithm="sac"', 'train.env="Pendulum-v1"', 'train.transformers=["normalize"]']

    plain = Engine(None, overrides, plugins=plugins, use_preset=False)
    tuned = Engine(None, overrides, plugins=plugins)

    assert plain.preset is None and tuned.preset.name == "sac/Pendulum-v1"
    assert {"sac", "gym", "normalize", "console", "tensorboard", "jsonl"} <= set(plain.config.to_dict())
    assert (plain.config.sections["sac"].initial_collect_steps, tuned.config.sections["sac"].initial_collect_steps) \
        == (1000, 100)
    assert (plain.config.train.unroll_length, tuned.config.train.unroll_length) == (32, 1)
    assert tuned.config.train.transformers == ["normalize"]  # the override, on top of the preset
