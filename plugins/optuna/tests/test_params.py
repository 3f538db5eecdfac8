"""``--param`` parsing: the four kinds, canonical text, overrides the core reads back, one-line errors."""

import optuna
import pytest
from rlengine_optuna.params import ParamError, parse_param, parse_params, split_choices

from rlengine import ConfigError


def test_each_kind_parses_to_its_distribution():
    lr = parse_param("ppo.learning_rate=loguniform:1e-5:1e-2")
    epochs = parse_param("ppo.num_epochs=int:4:20")
    clip = parse_param("ppo.clip_range = float:0.1:0.3")
    act = parse_param("ppo.activation=categorical:tanh,relu")

    assert (lr.kind, lr.low, lr.high) == ("loguniform", 1e-5, 1e-2)
    assert (epochs.low, epochs.high) == (4, 20) and isinstance(epochs.low, int)
    assert (clip.key, clip.low, clip.high) == ("ppo.clip_range", 0.1, 0.3) and isinstance(clip.low, float)
    assert act.choices == ("tanh", "relu")


def test_canonical_text_makes_two_spellings_one_search_space():
    assert str(parse_param("ppo.learning_rate=loguniform:1e-5:1e-2")) == \
        str(parse_param("ppo.learning_rate=loguniform:0.00001:0.01"))
    assert str(parse_param("ppo.num_epochs=int:4:20")) == "ppo.num_epochs=int:4:20"
    assert str(parse_param("ppo.activation=categorical:tanh,relu")) == 'ppo.activation=categorical:"tanh","relu"'


def test_categorical_values_are_toml_lists_included():
    sizes = parse_param("ppo.hidden_sizes=categorical:[64, 64],[128],32")

    assert sizes.choices == ([64, 64], [128], 32)
    assert sizes.labels == ("[64, 64]", "[128]", 32)  # Optuna stores scalars only
    assert sizes.value_of("[64, 64]") == [64, 64]
    assert sizes.override("[128]") == "ppo.hidden_sizes=[128]"


def test_overrides_are_toml_the_core_parses_back():
    from rlengine_optuna.params import parse_value

    for text, stored in [("ppo.learning_rate=loguniform:1e-5:1e-2", 3.2e-4), ("ppo.num_epochs=int:4:20", 7),
                         ("ppo.activation=categorical:tanh,relu", "relu"), ("x.flag=categorical:true,false", False),
                         ("ppo.hidden_sizes=categorical:[64,64],[8]", "[64, 64]"),
                         ("a.table=categorical:{ x = 1, \"y z\" = [2] },3", '{"x": 1, "y z": [2]}')]:
        param = parse_param(text)
        key, _, value = param.override(stored).partition("=")
        assert key == param.key and parse_value(value) == param.value_of(stored)


def test_suggest_asks_optuna_for_the_right_distribution():
    params = parse_params(["a.lr=loguniform:1e-4:1e-1", "a.n=int:1:3", "a.x=float:0:1", "a.c=categorical:[1],[2]"])
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    values = {p.key: p.suggest(trial) for p in params}

    assert 1e-4 <= values["a.lr"] <= 1e-1 and trial.distributions["a.lr"].log
    assert values["a.n"] in (1, 2, 3) and 0 <= values["a.x"] <= 1
    assert values["a.c"] in ("[1]", "[2]")


def test_split_choices_keeps_brackets_and_quotes_whole():
    assert split_choices('[1, 2], "a,b", c') == ["[1, 2]", '"a,b"', "c"]


@pytest.mark.parametrize("text, words", [
    ("ppo.learning_rate", "is not of the form section.key=KIND:SPEC"),
    ("learning_rate=float:0:1", "is not of the form"),
    ("ppo.learning_rate=logunifrom:1e-5:1e-2", "unknown kind 'logunifrom' (did you mean 'loguniform'?)"),
    ("ppo.num_epochs=int:4", "int takes LOW:HIGH"),
    ("ppo.num_epochs=int:4.5:20", "the bounds of int must be integers, got 4.5"),
    ("ppo.learning_rate=float:a:1", "must be numbers, got 'a'"),
    ("ppo.learning_rate=float:0.3:0.1", "LOW must be below HIGH"),
    ("ppo.learning_rate=loguniform:0:1", "loguniform needs LOW > 0"),
    ("ppo.activation=categorical:tanh", "two or more comma-separated values"),
    ("ppo.activation=categorical:tanh,tanh", "listed twice"),
    ("train.root_dir=categorical:a,b", "train.root_dir cannot be tuned"),
])
def test_a_bad_param_is_one_line_naming_it(text, words):
    with pytest.raises(ParamError) as info:
        parse_param(text)

    message = str(info.value)
    assert isinstance(info.value, ConfigError) and "\n" not in message
    assert message.startswith(f"--param {text!r}") and words in message


def test_a_key_tuned_twice_is_refused():
    with pytest.raises(ParamError, match="ppo.gamma is tuned twice"):
        parse_params(["ppo.gamma=float:0.9:0.99", "ppo.gamma=float:0.95:0.999"])
