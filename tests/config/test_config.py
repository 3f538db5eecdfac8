"""Run configuration: defaults, TOML files, --set overrides, validation and plugin sections."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import attrs
import pytest
import tomli_w
import tomllib

from rlengine import hookimpl
from rlengine.config import (
    DEFAULT_CONFIG,
    RunConfig,
    TrainConfig,
    apply_overrides,
    build_config,
    make_section,
    parse_value,
    read_toml,
)
from rlengine.errors import ConfigError
from rlengine.plugin.manager import DISABLE_ENV, TRACE_ENV, build_plugins
from rlengine.run.build import config_classes
from rlengine.run.engine import Engine
from rlengine.testing import CountingConfig, HookRecorder, testing_plugin, tiny_config

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(autouse=True)
def _clean_plugin_env(monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.delenv(TRACE_ENV, raising=False)


@pytest.fixture(scope="module")
def testing_classes():
    """Section -> config class with the entry-point plugins and the testing plugin."""
    return config_classes(build_plugins(extra_plugins=[("testing", testing_plugin())]))


def _engine(raw, overrides=(), extra=()):
    return Engine(raw, overrides, extra_plugins=[("testing", testing_plugin()), *extra])


def _config_error(raw, classes=None) -> str:
    with pytest.raises(ConfigError) as info:
        build_config(raw, classes or {})
    message = str(info.value)
    assert "\n" not in message
    return message


# -- defaults ----------------------------------------------------------------------
def test_train_defaults():
    cfg = TrainConfig()

    assert (cfg.algorithm, cfg.env, cfg.env_provider) == ("ppo", "CartPole-v1", "gym")
    assert (cfg.num_envs, cfg.num_env_steps, cfg.unroll_length, cfg.seed) == (8, 200_000, 32, 0)
    assert cfg.transformers == []
    assert cfg.writers == ["console", "tensorboard", "jsonl"]
    assert (cfg.summary_interval, cfg.eval_interval, cfg.num_eval_episodes) == (1, 10, 10)
    assert cfg.target_return is None
    assert (cfg.checkpoint_interval, cfg.keep_checkpoints) == (0, 3)
    assert cfg.root_dir == "" and cfg.eager is False


def test_list_defaults_are_not_shared():
    first, second = TrainConfig(), TrainConfig()
    first.writers.append("memory")
    first.transformers.append("normalize")

    assert second.writers == ["console", "tensorboard", "jsonl"]
    assert second.transformers == []


def test_empty_raw_config_builds_the_defaults():
    assert build_config({}, {}) == RunConfig()
    assert build_config({"train": {}}, {}) == RunConfig(TrainConfig(), {})


def test_absent_plugin_section_gives_the_plugin_defaults():
    config = RunConfig()

    assert config.section("counting", CountingConfig) == CountingConfig(episode_length=4)


def test_to_dict_leaves_out_none_values_and_sorts_sections():
    config = RunConfig(TrainConfig(seed=3), {"zeta": CountingConfig(2), "alpha": CountingConfig(5)})

    out = config.to_dict()

    assert list(out) == ["train", "alpha", "zeta"]
    assert "target_return" not in out["train"]
    assert out["train"]["seed"] == 3
    assert out["alpha"] == {"episode_length": 5}


@pytest.mark.first_party
def test_embedded_default_config_is_valid_with_the_installed_plugins():
    classes = config_classes(build_plugins())

    config = build_config(read_toml(DEFAULT_CONFIG), classes)

    assert config.train.algorithm == "ppo" and config.train.env == "CartPole-v1"
    assert config.train.target_return == 475.0
    assert "ppo" in config.sections


@pytest.mark.first_party
def test_engine_without_config_uses_the_embedded_default():
    engine = Engine()

    assert engine.config.train.algorithm == "ppo"
    assert engine.config.train.target_return == 475.0


# -- TOML files --------------------------------------------------------------------
def test_toml_file_is_loaded(testing_classes):
    raw = read_toml(str(DATA / "counting.toml"))

    config = build_config(raw, testing_classes)

    assert config.train.algorithm == "toy" and config.train.env == "counting"
    assert (config.train.num_envs, config.train.num_env_steps, config.train.seed) == (3, 48, 7)
    assert config.train.target_return == 12.5
    assert config.train.writers == ["memory"]
    assert config.sections == {"counting": CountingConfig(episode_length=6)}
    assert config.train.checkpoint_interval == 0  # keys the file leaves out keep their defaults


def test_engine_reads_a_toml_path_and_applies_overrides_on_top():
    engine = Engine.from_toml(str(DATA / "counting.toml"), ["train.seed=9", "counting.episode_length=2"],
                              extra_plugins=[("testing", testing_plugin())])

    assert engine.config.train.seed == 9
    assert engine.config.train.num_envs == 3
    assert engine.config.section("counting", CountingConfig).episode_length == 2


def test_engine_accepts_a_path_object():
    engine = Engine(DATA / "counting.toml", extra_plugins=[("testing", testing_plugin())])

    assert engine.config.train.num_envs == 3


def test_malformed_toml_names_the_file_and_the_line():
    path = str(DATA / "malformed.toml")

    with pytest.raises(ConfigError) as info:
        read_toml(path)

    message = str(info.value)
    assert "\n" not in message
    assert repr(path) in message
    assert "line 3" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_malformed_toml_is_reported_by_the_engine(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[train]\nseed = 3\nenv = "unterminated\n')

    with pytest.raises(ConfigError, match=r"run\.toml.*line 3"):
        Engine(str(path))


def test_missing_toml_file_is_a_config_error(tmp_path):
    path = str(tmp_path / "nope.toml")

    with pytest.raises(ConfigError, match="does not exist"):
        read_toml(path)


# -- overrides -----------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("3", 3),
    ("-2", -2),
    ("1_000", 1000),
    ("0.5", 0.5),
    ("3e-4", 3e-4),
    ("true", True),
    ("false", False),
    ('["jsonl", "memory"]', ["jsonl", "memory"]),
    ("[]", []),
    ("[1, 2.5]", [1, 2.5]),
    ('"quoted text"', "quoted text"),
    ("'literal'", "literal"),
    ("CartPole-v1", "CartPole-v1"),
    ("ALE/Pong-v5", "ALE/Pong-v5"),
    ("runs/my run", "runs/my run"),
    ("", ""),
])
def test_parse_value(text, expected):
    value = parse_value(text)

    assert value == expected
    assert type(value) is type(expected)


def test_apply_overrides_sets_typed_values():
    raw = apply_overrides({}, [
        "train.num_envs=4",
        "train.target_return=195.5",
        "train.eager=true",
        'train.writers=["jsonl"]',
        "train.env=CartPole-v1",
        "ppo.learning_rate=3e-4",
    ])

    assert raw == {
        "train": {"num_envs": 4, "target_return": 195.5, "eager": True, "writers": ["jsonl"],
                  "env": "CartPole-v1"},
        "ppo": {"learning_rate": 3e-4},
    }


def test_apply_overrides_strips_spaces_and_later_overrides_win():
    raw = apply_overrides({"train": {"seed": 1}}, [" train.seed = 2 ", "train.seed=5"])

    assert raw == {"train": {"seed": 5}}


def test_apply_overrides_does_not_change_its_input():
    original = {"train": {"seed": 1, "env": "counting"}}

    raw = apply_overrides(original, ["train.seed=2", "counting.episode_length=3"])

    assert original == {"train": {"seed": 1, "env": "counting"}}
    assert raw == {"train": {"seed": 2, "env": "counting"}, "counting": {"episode_length": 3}}


def test_value_may_contain_equals_signs():
    raw = apply_overrides({}, ["train.root_dir=runs/a=b"])

    assert raw["train"]["root_dir"] == "runs/a=b"


@pytest.mark.parametrize("item", ["train.seed", "seed=3", "trainseed", "=3", ""])
def test_override_without_a_dot_or_equals_is_a_config_error(item):
    with pytest.raises(ConfigError) as info:
        apply_overrides({}, [item])

    message = str(info.value)
    assert "\n" not in message
    assert f"--set {item!r}" in message
    assert "section.key=value" in message


def test_override_into_a_section_that_is_not_a_table_is_a_config_error():
    with pytest.raises(ConfigError, match=r"train"):
        apply_overrides({"train": 5}, ["train.seed=1"])


def test_overrides_are_validated_like_the_file():
    with pytest.raises(ConfigError, match="train.num_envs must be int"):
        _engine(tiny_config(), ["train.num_envs=many"])


# -- validation ----------------------------------------------------------------------
def test_unknown_key_names_section_key_and_a_close_match():
    message = _config_error({"train": {"nmu_envs": 4}})

    assert message.startswith("unknown config key train.nmu_envs;")
    assert "num_envs" in message
    assert "Did you mean 'num_envs'" in message


def test_unknown_key_without_a_close_match():
    message = _config_error({"train": {"qqqqqqq": 4}})

    assert "train.qqqqqqq" in message
    assert "Did you mean" not in message


@pytest.mark.parametrize("key, value, expected_type", [
    ("num_envs", "8", "int"),
    ("num_envs", True, "int"),
    ("num_envs", 2.0, "int"),
    ("seed", [1], "int"),
    ("eager", 1, "bool"),
    ("eager", "yes", "bool"),
    ("algorithm", 3, "str"),
    ("writers", "jsonl", "list or tuple"),
    ("target_return", "high", "NoneType or float or int"),
])
def test_wrong_type_names_the_key(key, value, expected_type):
    message = _config_error({"train": {key: value}})

    assert message.startswith(f"config key train.{key} must be {expected_type}, got {value!r}")


@pytest.mark.parametrize("key, value", [("target_return", 200), ("target_return", 1.5), ("eager", False)])
def test_acceptable_types(key, value):
    assert getattr(build_config({"train": {key: value}}, {}).train, key) == value


@pytest.mark.parametrize("key, value", [
    ("num_envs", 0),
    ("num_env_steps", -5),
    ("unroll_length", 0),
    ("seed", -1),
    ("summary_interval", 0),
    ("eval_interval", -1),
    ("num_eval_episodes", 0),
    ("keep_checkpoints", 0),
])
def test_out_of_range_names_the_key(key, value):
    message = _config_error({"train": {key: value}})

    assert message.startswith("invalid value in [train]:")
    assert f"'{key}'" in message


def test_a_choice_outside_its_options_is_one_readable_line():
    @attrs.define(kw_only=True)
    class Choosing:
        mode: str = attrs.field(default="a", validator=attrs.validators.in_(["a", "b"]))

    with pytest.raises(ConfigError) as info:
        make_section("choosing", Choosing, {"mode": "c"})
    assert str(info.value) == "invalid value in [choosing]: 'mode' must be in ['a', 'b'] (got 'c')"


def test_zero_is_allowed_where_it_means_never():
    config = build_config({"train": {"eval_interval": 0, "checkpoint_interval": 0, "seed": 0}}, {})

    assert (config.train.eval_interval, config.train.checkpoint_interval) == (0, 0)


@pytest.mark.first_party
def test_unknown_section_is_named_with_the_known_sections(testing_classes):
    message = _config_error({"countng": {"episode_length": 3}}, testing_classes)

    assert message.startswith("config section [countng] matches no loaded plugin; known sections: train, ")
    assert "counting" in message and "ppo" in message and "jsonl" in message
    assert "Did you mean 'counting'" in message


def test_misspelt_train_section_suggests_train(testing_classes):
    message = _config_error({"trian": {"seed": 3}}, testing_classes)

    assert "Did you mean 'train'" in message


def test_section_that_is_not_a_table_is_a_config_error(testing_classes):
    message = _config_error({"counting": 5}, testing_classes)

    assert "[counting] must be a table" in message


def test_top_level_key_outside_a_section_is_reported(testing_classes):
    message = _config_error({"seed": 3}, testing_classes)

    assert "[seed]" in message


# -- plugin sections -------------------------------------------------------------------
def test_plugin_section_is_built_with_the_plugins_attrs_class(tmp_path):
    raw = tiny_config(str(tmp_path))
    raw["counting"] = {"episode_length": 7}

    engine = _engine(raw)

    assert engine.config.sections == {"counting": CountingConfig(episode_length=7)}
    assert engine.config.section("counting", CountingConfig) is engine.config.sections["counting"]


def test_plugin_section_from_an_override():
    engine = _engine(tiny_config(), ["counting.episode_length=9"])

    assert engine.config.section("counting", CountingConfig).episode_length == 9


def test_plugin_section_errors_name_section_and_key():
    with pytest.raises(ConfigError, match=r"config key counting\.episode_length must be int, got '7'"):
        _engine(tiny_config(), ['counting.episode_length="7"'])
    with pytest.raises(ConfigError, match=r"invalid value in \[counting\]: 'episode_length' must be > 0"):
        _engine(tiny_config(), ["counting.episode_length=0"])
    with pytest.raises(ConfigError, match=r"unknown config key counting\.episode_lenght;.*Did you mean "
                                          r"'episode_length'"):
        _engine(tiny_config(), ["counting.episode_lenght=3"])


def test_plugin_section_needs_the_plugin_loaded():
    raw = tiny_config()
    raw["counting"] = {"episode_length": 7}

    with pytest.raises(ConfigError, match=r"config section \[counting\] matches no loaded plugin"):
        Engine(raw)


def test_plugin_section_reaches_the_environment(tmp_path):
    raw = tiny_config(str(tmp_path), eval_interval=0)
    raw["counting"] = {"episode_length": 2}
    seen = {}

    class Spy:
        @hookimpl
        def rlengine_train_start(self, run):
            seen["episode_length"] = run.environments[0].config.episode_length

    _engine(raw, extra=[("spy", Spy())]).train()

    assert seen == {"episode_length": 2}


@attrs.define
class ModernConfig:
    """A plugin config annotated the Python 3.10+ way."""

    limit: int | None = None
    scale: float = 1.0


@attrs.define
class ClassicConfig:
    limit: Optional[int] = None


def test_optional_field_is_type_checked():
    with pytest.raises(ConfigError, match=r"config key classic\.limit must be"):
        make_section("classic", ClassicConfig, {"limit": "abc"})
    assert make_section("classic", ClassicConfig, {"limit": 3}) == ClassicConfig(3)


def test_pep604_optional_field_is_type_checked():
    with pytest.raises(ConfigError, match=r"config key modern\.limit must be NoneType or int, got 'abc'"):
        build_config({"modern": {"limit": "abc"}}, {"modern": ModernConfig})
    assert build_config({"modern": {"limit": 3}}, {"modern": ModernConfig}).sections["modern"].limit == 3


def test_float_field_accepts_an_int_but_not_a_string():
    assert make_section("modern", ModernConfig, {"scale": 2}).scale == 2
    with pytest.raises(ConfigError, match=r"config key modern\.scale must be float or int"):
        make_section("modern", ModernConfig, {"scale": "2"})


# -- the rlengine_configure hook -----------------------------------------------------------
class SetSeed:
    def __init__(self, transform):
        self.transform = transform
        self.seen = []

    @hookimpl
    def rlengine_configure(self, config):
        self.seen.append(config.train.seed)
        return attrs.evolve(config, train=attrs.evolve(config.train, seed=self.transform(config.train.seed)))


class Refuse:
    @hookimpl
    def rlengine_configure(self, config):
        if config.train.num_envs > 2:
            raise ConfigError("train.num_envs above 2 is not supported by the refuse plugin")


def test_configure_hook_can_replace_the_config():
    plugin = SetSeed(lambda seed: 42)

    engine = _engine(tiny_config(seed=1), extra=[("set_seed", plugin)])

    assert engine.config.train.seed == 42
    assert plugin.seen == [1]


def test_configure_hook_sees_the_validated_config():
    seen = []

    class Look:
        @hookimpl
        def rlengine_configure(self, config):
            seen.append(config)

    _engine(tiny_config(num_envs=3), ["counting.episode_length=5"], extra=[("look", Look())])

    assert isinstance(seen[0], RunConfig)
    assert seen[0].train.num_envs == 3
    assert seen[0].sections["counting"] == CountingConfig(5)


def test_configure_hooks_chain_across_plugins():
    add_one, times_ten = SetSeed(lambda s: s + 1), SetSeed(lambda s: s * 10)

    engine = _engine(tiny_config(seed=1), extra=[("add_one", add_one), ("recorder", HookRecorder()),
                                                  ("times_ten", times_ten)])

    # Newest first: times_ten sees the file's seed, add_one sees times_ten's result.
    assert times_ten.seen == [1]
    assert add_one.seen == [10]
    assert engine.config.train.seed == 11


def test_configure_hook_returning_none_keeps_the_config():
    recorder = HookRecorder()

    engine = _engine(tiny_config(seed=5), extra=[("recorder", recorder)])

    assert recorder.calls == ["configure"]
    # plus the environment's section of defaults, as every section the run uses is listed (tests/config/test_presets.py)
    assert engine.config == build_config(tiny_config(seed=5), {}).with_default_sections({"counting": CountingConfig})


def test_configure_hook_can_refuse_the_config():
    with pytest.raises(ConfigError, match="above 2"):
        _engine(tiny_config(num_envs=3), extra=[("refuse", Refuse())])
    _engine(tiny_config(num_envs=2), extra=[("refuse", Refuse())])


# -- the effective config of a run ---------------------------------------------------------
def test_effective_config_is_written_and_reads_back_equal(tmp_path):
    root_dir = tmp_path / "run"
    raw = tiny_config(str(root_dir), target_return=1000.0)
    raw["counting"] = {"episode_length": 3}
    engine = _engine(raw, ["train.seed=4"], extra=[("set_seed", SetSeed(lambda s: s + 100))])

    result = engine.train()

    path = root_dir / "config.toml"
    assert result.root_dir == str(root_dir)
    assert path.is_file()
    assert not [p for p in os.listdir(root_dir) if ".tmp-" in p]
    written = read_toml(str(path))
    assert written["train"]["seed"] == 104  # after the configure hook
    assert written["counting"] == {"episode_length": 3}
    reread = build_config(written, config_classes(engine.plugins))
    assert reread == engine.config
    assert isinstance(reread.sections["counting"], CountingConfig)


@pytest.mark.first_party
def test_default_config_round_trips_through_toml():
    engine = Engine()

    text = tomli_w.dumps(engine.config.to_dict())

    assert build_config(tomllib.loads(text), config_classes(engine.plugins)) == engine.config


def test_every_installed_plugin_section_round_trips_through_toml(testing_classes):
    config = build_config({name: {} for name in testing_classes}, testing_classes)

    text = tomli_w.dumps(config.to_dict())

    assert set(config.sections) == set(testing_classes)
    assert build_config(tomllib.loads(text), testing_classes) == config


def test_written_config_drops_unset_optional_values(tmp_path):
    engine = _engine(tiny_config(str(tmp_path / "run"), num_env_steps=8, eval_interval=0))
    engine.train()

    written = read_toml(str(tmp_path / "run" / "config.toml"))

    assert "target_return" not in written["train"]
    assert build_config(written, config_classes(engine.plugins)) == engine.config
