"""Presets: a plugin's tuned settings of an (algorithm, env) pair, chosen when a run names only the pair;
and the run's config.toml, which lists every section it uses with every key's effective value."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import tomli_w

from rlengine import cli, hookimpl
from rlengine.commands import seeds
from rlengine.config import DEFAULT_CONFIG, read_toml, starting_config
from rlengine.errors import ConfigError, RegistryError
from rlengine.plugin import manager
from rlengine.plugin.manager import build_plugins
from rlengine.plugin.registry import KIND_BY_NAME, Registry
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

PAIR = ["train.algorithm=toy", "train.env=counting"]


def preset_file(directory: Path, **counting) -> Path:
    """A third party's preset of the toy algorithm on the counting env."""
    raw = tiny_config(num_envs=3, unroll_length=5, num_env_steps=30, eval_interval=0)
    raw["counting"] = {"episode_length": 6, **counting}
    path = directory / "toy_counting.toml"
    path.write_text("# Tuned by hand for the counting env\n" + tomli_w.dumps(raw))
    return path


class PresetPlugin:
    """Registers presets, as a plugin shipping presets for its env does."""

    def __init__(self, **presets: Path):
        self.presets = presets

    @hookimpl
    def rlengine_register_presets(self, register):
        for name, path in self.presets.items():
            register(name.replace("__", "/"), path)


def engine(path: Path, config=None, overrides=(), **kwargs) -> Engine:
    extra = [("testing", testing_plugin()), ("my-presets", PresetPlugin(toy__counting=path))]
    return Engine(config, [*PAIR, *overrides], extra_plugins=extra, **kwargs)


# -- choosing ---------------------------------------------------------------------------
def test_register_presets_hook_a_pair_with_a_preset_starts_from_it_and_the_overrides_apply_on_top(tmp_path):
    run = engine(preset_file(tmp_path), overrides=["train.num_envs=2"])

    assert run.preset.name == "toy/counting" and run.preset.plugin == "my-presets"
    assert (run.config.train.unroll_length, run.config.train.num_envs) == (5, 2)
    assert run.config.sections["counting"].episode_length == 6
    assert run.preset.announcement() == ("rlengine: settings from the preset toy/counting (plugin 'my-presets'); "
                                         "--no-preset for plain defaults")
    assert run.preset.summary() == "Tuned by hand for the counting env"


@pytest.mark.first_party  # the default writers come from rlengine-writers
def test_no_preset_gives_every_keys_default(tmp_path):
    run = engine(preset_file(tmp_path), use_preset=False)

    assert run.preset is None
    assert run.config.train.unroll_length == 32 and run.config.sections["counting"].episode_length == 4


def test_a_config_file_or_dict_is_used_as_it_is_even_for_a_pair_with_a_preset(tmp_path):
    path = preset_file(tmp_path)
    given = tiny_config(unroll_length=7)
    (tmp_path / "mine.toml").write_text(tomli_w.dumps(given))

    for config in (str(tmp_path / "mine.toml"), given):
        run = engine(path, config)
        assert run.preset is None and run.config.train.unroll_length == 7


def test_no_overrides_give_the_demo_and_a_pair_without_a_preset_the_defaults(tmp_path):
    registry = Registry(KIND_BY_NAME["preset"])
    registry.register_for("my-presets")("toy/counting", preset_file(tmp_path))

    assert starting_config(None, [], registry) == (read_toml(DEFAULT_CONFIG), None)
    assert starting_config(None, ["train.env=other"], registry) == ({}, None)
    raw, preset = starting_config(None, ['train.algorithm="toy"', "train.env=counting"], registry)
    assert preset.name == "toy/counting" and raw["counting"] == {"episode_length": 6}


def test_a_preset_whose_file_names_another_pair_or_a_wrong_key_is_one_line_naming_it(tmp_path):
    path = preset_file(tmp_path)
    path.write_text(path.read_text().replace('env = "counting"', 'env = "CartPole-v1"'))
    with pytest.raises(ConfigError, match=r"^preset toy/counting of plugin 'my-presets' \(.*toy_counting.toml\) "
                                          r"sets train.algorithm = 'toy' and train.env = 'CartPole-v1'"):
        engine(path)

    with pytest.raises(ConfigError, match=r"unknown config key counting.length; .* \(the settings come from the "
                                          r"preset toy/counting \(plugin 'my-presets', .*\); --no-preset for plain"):
        engine(preset_file(tmp_path, length=3))


def test_a_preset_registered_as_something_else_than_a_path_is_one_line():
    registry = Registry(KIND_BY_NAME["preset"])
    registry.register_for("my-presets")("toy/counting", 42)

    with pytest.raises(RegistryError, match="plugin 'my-presets' registered preset 'toy/counting' as 42, which is "
                                            "not the path of a TOML file: register a pathlib.Path"):
        starting_config(None, PAIR, registry)


def test_two_plugins_registering_one_preset_name_are_refused_naming_both(tmp_path):
    path = preset_file(tmp_path)
    plugins = build_plugins(load_entry_points=False, extra_plugins=[
        ("first", PresetPlugin(toy__counting=path)), ("second", PresetPlugin(toy__counting=path))])

    assert [f.name for f in plugins.failures] == ["second"]
    assert "preset 'toy/counting' is registered by both plugin 'first' and plugin 'second'" in plugins.failures[0].message


# -- the command line -------------------------------------------------------------------
@pytest.fixture
def cli_with_presets(monkeypatch, capsys, tmp_path):
    """``rlengine ARGV`` in-process with the testing kit and a toy/counting preset: (status, stdout lines)."""
    real, path = manager.build_plugins, preset_file(tmp_path)

    def build(disabled=(), extra_plugins=(), load_entry_points=True):
        extra = [("testing", testing_plugin()), ("my-presets", PresetPlugin(toy__counting=path)), *extra_plugins]
        return real(disabled=disabled, extra_plugins=extra, load_entry_points=load_entry_points)

    monkeypatch.setattr(manager, "build_plugins", build)

    def run(*argv):
        status = cli.main([str(word) for word in argv])
        out, err = capsys.readouterr()
        assert status == 0, err
        return out.splitlines()

    return run


def test_train_says_in_one_line_which_preset_it_uses_and_no_preset_turns_it_off(tmp_path, cli_with_presets):
    lines = cli_with_presets("train", "--algorithm", "toy", "--env", "counting", "--root-dir", tmp_path / "a",
                             "--set", 'train.writers=["memory"]')
    said = [line for line in lines if "preset" in line]
    assert said == ["rlengine: settings from the preset toy/counting (plugin 'my-presets'); --no-preset for plain "
                    "defaults"]
    assert read_toml(str(tmp_path / "a" / "config.toml"))["train"]["unroll_length"] == 5
    assert "# Settings from the preset toy/counting (plugin 'my-presets', " in (tmp_path / "a" / "config.toml").read_text()

    lines = cli_with_presets("train", "--algorithm", "toy", "--env", "counting", "--root-dir", tmp_path / "b",
                             "--no-preset", "--num-env-steps", "16", "--set", 'train.writers=["memory"]')
    assert not [line for line in lines if "preset" in line]
    assert read_toml(str(tmp_path / "b" / "config.toml"))["train"]["unroll_length"] == 32


def test_seeds_choose_the_preset_once_and_hand_the_children_its_file(tmp_path, cli_with_presets, capsys):
    args = cli.parser().parse_args(["train", "--algorithm", "toy", "--env", "counting", "--seeds", "0-1"])
    overrides = ['train.algorithm="toy"', 'train.env="counting"']

    chosen = seeds.with_preset(args, overrides)

    assert capsys.readouterr().out.startswith("rlengine: settings from the preset toy/counting")
    assert chosen.config.endswith("toy_counting.toml") and args.config is None
    assert seeds.effective_train(chosen.config, overrides)["num_env_steps"] == 30  # the preset's budget
    assert seeds.child_argv(chosen, overrides, 1, "p/seed-1")[:2] == ["train", chosen.config]
    args.no_preset = True
    assert seeds.with_preset(args, overrides) is args
    assert seeds.child_argv(args, overrides, 1, "p/seed-1")[:2] == ["train", "--no-preset"]


# -- config.toml ------------------------------------------------------------------------
@attrs.define
class SlowConfig:
    max_seconds: float = 5.0  # a key of the callback's own section
    note: str | None = None  # unset: written as a comment


class SlowIterations:
    """A callback with a config section: config.toml lists it when the config sets it (even empty)."""

    config_class = SlowConfig

    def __init__(self, config):
        self.config = config

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        pass


class CallbackPlugin:
    @hookimpl
    def rlengine_register_callbacks(self, register):
        register("slow", SlowIterations)


def test_config_toml_lists_every_section_the_run_uses_with_the_effective_values(tmp_path):
    root = tmp_path / "run"
    extra = [("testing", testing_plugin()), ("callbacks", CallbackPlugin())]
    Engine({**tiny_config(str(root), num_env_steps=8), "slow": {}}, extra_plugins=extra).train()

    text = (root / "config.toml").read_text()
    written = read_toml(str(root / "config.toml"))

    assert written["counting"] == {"episode_length": 4}  # the environment's, not in the given config
    assert written["slow"] == {"max_seconds": 5.0}  # the callback's, set empty
    assert written["train"]["eval_interval"] == 2 and written["train"]["keep_checkpoints"] == 3
    assert "[slow]\n# note: unset\nmax_seconds = 5.0\n" in text and "[train]\n# target_return: unset\n" in text
    assert text.startswith("# The settings of this run: every section it uses")


def test_a_run_dir_written_with_fewer_sections_resumes(tmp_path):
    root = tmp_path / "run"
    config = tiny_config(str(root), num_env_steps=16, checkpoint_interval=1)
    extra = [("testing", testing_plugin()), ("callbacks", CallbackPlugin())]
    Engine(config, extra_plugins=extra).train()
    old = {"train": read_toml(str(root / "config.toml"))["train"]}  # as the versions before wrote it
    (root / "config.toml").write_text(tomli_w.dumps(old))

    result = Engine(config, extra_plugins=extra).train()

    assert result.env_steps == 16  # resumed at the end of the budget, not refused
    assert read_toml(str(root / "config.toml"))["counting"] == {"episode_length": 4}  # rewritten whole
