"""The ``rlengine`` command line (mostly in-process: each subprocess pays a TensorFlow import)."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import rlengine
import rlengine.plugin.manager
from rlengine import cli, hookimpl
from rlengine.commands.plugins import MAX_NAMES_SHOWN
from rlengine.config import apply_overrides
from rlengine.errors import ConfigError
from rlengine.plugin.manager import DISABLE_ENV, TRACE_ENV
from rlengine.plugin.registry import KINDS
from tests import first_party

DEBUG_ENV = "RLENGINE_DEBUG"
KIND_KEYS = tuple(kind.plural for kind in KINDS)  # algorithms, ..., pipelines, distributions, commands


@pytest.fixture(autouse=True)
def _clean_plugin_env(monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.delenv(TRACE_ENV, raising=False)
    monkeypatch.delenv(DEBUG_ENV, raising=False)  # main(["--debug", ...]) sets it; undone after each test


def run_main(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plugins_json(capsys, *argv):
    code, out, err = run_main(capsys, *argv, "plugins", "--json")
    return code, json.loads(out), err


def by_name(rows):
    return {row["name"]: row for row in rows}


# -- basics ----------------------------------------------------------------------
def test_version(capsys):
    code, out, err = run_main(capsys, "--version")

    assert code == 0
    assert out == f"rlengine {rlengine.__version__}\n"
    assert err == ""


def test_no_command_prints_help_and_exits_2(capsys):
    code, out, _ = run_main(capsys)

    assert code == 2
    assert "usage: rlengine" in out
    assert "train" in out and "plugins" in out


def test_unknown_command_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["fly"])

    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_help_lists_the_core_commands_with_their_help(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    out = capsys.readouterr().out

    assert info.value.code == 0
    assert "train an agent" in out and "list loaded plugins" in out


def test_help_imports_no_tensorflow():
    # --help imports every command class: each must keep TensorFlow out of its module's top.
    code = ("import sys\nfrom rlengine import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "sys.exit('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, f"rlengine --help imported TensorFlow\n{done.stderr[-2000:]}"


# -- commands registered by a plugin -------------------------------------------------
class Hello(rlengine.Command):
    help = "say hello"

    def add_arguments(self, parser):
        parser.add_argument("--name", default="world")

    def run(self, args):
        print(f"hello {args.name}; plugins built: {args.plugins is not None}; argv {args.argv}")
        return 3


class HelloPlugin:
    @hookimpl
    def rlengine_register_commands(self, register):
        register("hello", Hello)
        register("broken", "no_such_module_anywhere:Command")


def add_in_process_plugin(monkeypatch, name, plugin):
    """Every plugin set the CLI builds from now on holds ``plugin`` as ``name`` too."""
    real = rlengine.plugin.manager.build_plugins

    def build(disabled=(), extra_plugins=(), load_entry_points=True):
        return real(disabled, [(name, plugin), *extra_plugins], load_entry_points)

    monkeypatch.setattr(rlengine.plugin.manager, "build_plugins", build)


@pytest.fixture
def with_hello_plugin(monkeypatch):
    add_in_process_plugin(monkeypatch, "hello", HelloPlugin())


def test_a_plugin_command_runs_with_the_built_plugins_and_returns_its_status(capsys, with_hello_plugin):
    code, out, _ = run_main(capsys, "hello", "--name", "you")

    assert code == 3
    assert out == "hello you; plugins built: True; argv ['hello', '--name', 'you']\n"


def test_a_plugin_command_is_in_help_and_one_that_cannot_load_is_one_warning(capsys, with_hello_plugin):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out, err = capsys.readouterr()

    assert "hello" in out and "say hello" in out
    assert "broken" not in out
    # One distinct line (rlengine/cli.py loads the commands twice, for main and for the parser, and
    # so prints it twice today).
    [line] = {line for line in err.splitlines() if "broken" in line}
    assert line.startswith("rlengine: warning: plugin 'hello' registered command 'broken'")
    assert "cannot be imported" in line


def test_plugins_lists_the_commands_each_plugin_registers(capsys, with_hello_plugin):
    _, rows, _ = plugins_json(capsys)

    plugins = by_name(rows)
    assert plugins["builtin-commands"]["commands"] == ["plugins", "train"]
    assert plugins["builtin-commands"]["distribution"] == "rlengine"
    assert plugins["hello"]["commands"] == ["broken", "hello"]  # listing imports no command class


def test_disabling_a_plugin_removes_its_commands(capsys, with_hello_plugin):
    with pytest.raises(SystemExit) as info:
        cli.main(["--disable-plugin", "hello", "hello"])

    assert info.value.code == 2
    assert "invalid choice: 'hello'" in capsys.readouterr().err


# -- plugins ---------------------------------------------------------------------
class Lister:
    """Registers by reference (listing imports nothing), more environments than the table names."""

    ENVIRONMENTS = [f"env{i}" for i in range(MAX_NAMES_SHOWN + 1)]

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("b-algo", "rlengine.testing.kit:ToyQAlgorithm")
        register("a-algo", "rlengine.testing.kit:ToyAlgorithm")

    @hookimpl
    def rlengine_register_environments(self, register):
        for name in self.ENVIRONMENTS:
            register(name, "rlengine.testing.kit:CountingEnv")


@pytest.fixture
def with_lister_plugin(monkeypatch):
    add_in_process_plugin(monkeypatch, "lister", Lister())


def installed_entry_points() -> dict:
    """Entry-point name -> (distribution, version), of every plugin installed here."""
    return {ep.name: (ep.dist.metadata["Name"], ep.dist.version) for ep in md.entry_points(group="rlengine")}


def test_plugins_json_lists_what_each_plugin_registers(capsys, with_lister_plugin):
    code, rows, err = plugins_json(capsys)

    assert code == 0
    assert err == ""
    for row in rows:
        assert isinstance(row["name"], str) and isinstance(row["version"], str)
        for kind in KIND_KEYS:
            assert isinstance(row[kind], list) and all(isinstance(n, str) for n in row[kind])
    plugins = by_name(rows)
    lister = plugins["lister"]
    assert lister["distribution"] == "in-process"
    assert lister["algorithms"] == ["a-algo", "b-algo"]  # sorted
    assert lister["environments"] == sorted(Lister.ENVIRONMENTS)
    assert all(lister[kind] == [] for kind in KIND_KEYS if kind not in ("algorithms", "environments"))
    builtins = plugins["builtin-distributions"]
    assert builtins["distribution"] == "rlengine" and builtins["version"] == rlengine.__version__
    assert builtins["distributions"][0] == "bernoulli" and {"categorical", "normal"} <= set(builtins["distributions"])


@pytest.mark.first_party
def test_plugins_json_lists_every_installed_plugin_with_its_distribution(capsys):
    _, rows, _ = plugins_json(capsys)

    listed = {row["name"]: (row["distribution"], row["version"]) for row in rows}
    installed = installed_entry_points()
    assert installed and {name: listed.get(name) for name in installed} == installed


def test_plugins_table_names_what_each_plugin_registers_and_counts_long_lists(capsys, with_lister_plugin):
    code, out, err = run_main(capsys, "plugins")

    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["plugin", "distribution", "version", "registers"]
    lister = next(line for line in lines if line.startswith("lister "))
    assert lister.split()[:2] == ["lister", "in-process"]
    too_many = len(Lister.ENVIRONMENTS)
    assert lister.endswith(f"  algorithms: a-algo, b-algo; environments: {too_many} (--json lists them)")
    builtins = next(line for line in lines if line.startswith("builtin-distributions "))
    assert builtins.split()[1:3] == ["rlengine", rlengine.__version__]
    assert "distributions: bernoulli, categorical" in builtins


@pytest.mark.first_party
def test_plugins_table_lists_every_installed_plugin_with_its_distribution(capsys):
    _, out, _ = run_main(capsys, "plugins")

    listed = {line.split()[0]: tuple(line.split()[1:3]) for line in out.splitlines()[1:]}
    installed = installed_entry_points()
    assert installed and {name: listed.get(name) for name in installed} == installed


@pytest.mark.first_party
def test_disable_plugin_removes_an_installed_one(capsys):
    first, *others = [p.entry_point for p in first_party.installed()]
    code, rows, _ = plugins_json(capsys, "--disable-plugin", first)

    names = {row["name"] for row in rows}
    assert code == 0
    assert first not in names
    assert set(others) <= names


@pytest.mark.first_party
def test_disable_plugin_is_repeatable(capsys):
    first, second, *others = [p.entry_point for p in first_party.installed()]
    _, rows, _ = plugins_json(capsys, "--disable-plugin", first, "--disable-plugin", second)

    names = {row["name"] for row in rows}
    assert first not in names and second not in names
    assert set(others) <= names


def test_disable_environment_variable_removes_it(capsys, monkeypatch, with_hello_plugin):
    assert "hello" in {row["name"] for row in plugins_json(capsys)[1]}
    monkeypatch.setenv(DISABLE_ENV, "hello")

    _, rows, _ = plugins_json(capsys)

    assert "hello" not in {row["name"] for row in rows}


class Bogus:
    @hookimpl
    def rlengine_bogus(self):
        pass


@pytest.fixture
def with_bogus_plugin(monkeypatch):
    add_in_process_plugin(monkeypatch, "bogus", Bogus())


def test_plugin_failure_is_one_stderr_line_and_exit_1(capsys, with_lister_plugin, with_bogus_plugin):
    code, rows, err = plugins_json(capsys)

    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("rlengine: error: plugin 'bogus' (")
    assert "implements an unknown hook" in err
    plugins = by_name(rows)
    assert "unknown hook" in plugins["bogus"]["error"]
    assert {"lister", "builtin-commands", *installed_entry_points()} <= set(plugins)  # the others still load


def test_plugin_failure_with_debug_shows_the_traceback(capsys, with_bogus_plugin):
    code, _, err = plugins_json(capsys, "--debug")

    assert code == 1
    assert "rlengine: error: plugin 'bogus'" in err
    assert "Traceback" in err


def test_disabled_failing_plugin_is_no_failure(capsys, with_bogus_plugin):
    code, rows, err = plugins_json(capsys, "--disable-plugin", "bogus")

    assert code == 0 and err == ""
    assert "bogus" not in {row["name"] for row in rows}


# -- train errors ----------------------------------------------------------------------
def _assert_one_error_line(err: str, start: str) -> None:
    assert err.startswith(f"rlengine: error: {start}"), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err


@pytest.mark.first_party
def test_train_with_a_bad_set_key_exits_2_with_one_line(capsys):
    code, out, err = run_main(capsys, "train", "--set", "train.nmu_envs=3")

    assert code == 2
    assert out == ""
    _assert_one_error_line(err, "unknown config key train.nmu_envs;")
    assert "Did you mean 'num_envs'" in err


@pytest.mark.parametrize("argv, start", [
    (["train", "--set", "seed3"], "--set 'seed3' is not of the form section.key=value"),
    (["train", "--set", "train.num_envs=true"], "config key train.num_envs must be int"),
    (["train", "--num-envs", "0"], "invalid value in [train]: 'num_envs'"),
    (["train", "--set", "trian.seed=1"], "config section [trian] matches no loaded plugin"),
    (["train", "--set", "ppo.learning_rat=1e-3"], "unknown config key ppo.learning_rat;"),
    (["--disable-plugin", "algorithms", "train", "--set", "ppo.learning_rate=1e-3"],
     "config section [ppo] matches no loaded plugin"),
])
@pytest.mark.first_party
def test_train_config_errors_exit_2_with_one_line(capsys, argv, start):
    code, _, err = run_main(capsys, *argv)

    assert code == 2
    _assert_one_error_line(err, start)


def test_train_with_a_missing_config_file(capsys, tmp_path):
    code, _, err = run_main(capsys, "train", str(tmp_path / "missing.toml"))

    assert code == 2
    _assert_one_error_line(err, "config file")
    assert "does not exist" in err


def test_train_with_a_malformed_config_file(capsys):
    path = os.path.join(os.path.dirname(__file__), "..", "data", "malformed.toml")

    code, _, err = run_main(capsys, "train", path)

    assert code == 2
    _assert_one_error_line(err, "config file")
    assert "malformed.toml" in err and "line 3" in err


@pytest.mark.first_party
def test_train_config_error_with_debug_shows_the_traceback(capsys):
    code, _, err = run_main(capsys, "--debug", "train", "--set", "train.nmu_envs=3")

    assert code == 2
    assert "Traceback" in err
    assert err.rstrip().splitlines()[-1].startswith("rlengine: error: unknown config key train.nmu_envs")


# -- train flags -------------------------------------------------------------------------
class StopEngine:
    """Stands in for rlengine.run.engine.Engine and records how the CLI built it."""

    calls: list = []

    def __init__(self, config, overrides=(), *, plugins=None, disabled_plugins=(), force=False, use_preset=True):
        StopEngine.calls.append((config, list(overrides), list(disabled_plugins)))
        StopEngine.use_preset = use_preset
        StopEngine.plugins = plugins
        raise ConfigError("stopped before building anything")


@pytest.fixture
def recorded_engine(monkeypatch):
    import rlengine.run.engine

    StopEngine.calls = []
    monkeypatch.setattr(rlengine.run.engine, "Engine", StopEngine)
    return StopEngine.calls


def test_train_flags_become_train_overrides_before_set(capsys, recorded_engine):
    code, _, _ = run_main(capsys, "--disable-plugin", "gym", "train", "run.toml", "--algorithm", "toy",
                          "--env", "counting", "--num-envs", "2", "--num-env-steps", "64", "--seed", "3",
                          "--root-dir", "runs/x y", "--eager", "--set", "train.seed=5")

    assert code == 2
    [(config, overrides, disabled)] = recorded_engine
    assert config == "run.toml"
    assert disabled == ["gym"]
    assert overrides[-1] == "train.seed=5"
    assert apply_overrides({}, overrides)["train"] == {
        "algorithm": "toy", "env": "counting", "num_envs": 2, "num_env_steps": 64, "seed": 5,
        "root_dir": "runs/x y", "eager": True,
    }


def test_train_uses_the_plugins_the_cli_built(capsys, recorded_engine):
    run_main(capsys, "--disable-plugin", "gym", "train")

    assert isinstance(StopEngine.plugins, rlengine.plugin.manager.Plugins)  # built once, for parsing too
    assert "gym" not in {info.name for info in StopEngine.plugins.infos}


def test_no_preset_reaches_the_engine(capsys, recorded_engine):
    run_main(capsys, "train", "--algorithm", "toy")
    assert StopEngine.use_preset is True
    run_main(capsys, "train", "--algorithm", "toy", "--no-preset")
    assert StopEngine.use_preset is False


def test_train_flag_values_are_taken_literally(capsys, recorded_engine):
    run_main(capsys, "train", "--env", "true", "--root-dir", 'runs/"quoted"\\dir')

    [(_, overrides, _)] = recorded_engine
    assert apply_overrides({}, overrides)["train"] == {"env": "true", "root_dir": 'runs/"quoted"\\dir'}


def test_train_flag_with_a_non_bmp_character_is_kept(capsys, recorded_engine):
    run_main(capsys, "train", "--root-dir", "runs/\U0001F600")

    [(_, overrides, _)] = recorded_engine
    assert apply_overrides({}, overrides)["train"]["root_dir"] == "runs/\U0001F600"


# -- a real process ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bad_key_process(tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if k not in (DISABLE_ENV, TRACE_ENV, DEBUG_ENV)}
    return subprocess.run(
        [sys.executable, "-m", "rlengine.cli", "train", "--set", "train.nmu_envs=3"],
        capture_output=True, text=True, env=env, cwd=tmp_path_factory.mktemp("cli"), timeout=120,
    )


@pytest.mark.first_party
def test_process_config_error_exits_2_with_one_error_line_and_no_traceback(bad_key_process):
    assert bad_key_process.returncode == 2
    assert bad_key_process.stdout == ""
    errors = [line for line in bad_key_process.stderr.splitlines() if line.startswith("rlengine: error:")]
    assert errors == [errors[0]] and errors[0].startswith("rlengine: error: unknown config key train.nmu_envs")
    assert "Traceback" not in bad_key_process.stderr


@pytest.mark.first_party
def test_process_config_error_prints_nothing_else_on_stderr(bad_key_process):
    # TensorFlow's C++ start-up chatter must not surround the error.
    [line] = bad_key_process.stderr.splitlines()
    assert line.startswith("rlengine: error: unknown config key train.nmu_envs")


class ClaimsTwoCommands:
    """A plugin whose command ``plugins`` clashes with the core's, beside a command of its own."""

    @hookimpl
    def rlengine_register_commands(self, register):
        register("plugins", Hello)
        register("hello", Hello)


def test_a_command_name_two_plugins_register_is_refused_and_every_other_command_stays(capsys):
    plugins = rlengine.plugin.manager.build_plugins(load_entry_points=False, extra_plugins=[
        ("claims", ClaimsTwoCommands())])

    commands = rlengine.cli.commands_of(plugins)

    assert "hello" in commands and "train" in commands  # the clashing plugin's other command, the core's
    assert "plugins" not in commands  # which one was meant is not known: neither runs
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "command 'plugins' is registered by both plugin 'builtin-commands' and plugin 'claims'" in err


@pytest.mark.parametrize("words, expected", [
    (["train", "--no-such-flag"], "rlengine: error: unrecognized arguments: --no-such-flag (see: rlengine train --help)"),
    (["trian"], "Did you mean 'train'? (see: rlengine --help)"),
    (["train", "--num-envs"], "rlengine train: error: argument --num-envs: expected one argument (see: rlengine "
                              "train --help)"),
])
def test_a_usage_error_is_one_line_naming_the_help_to_read(capsys, words, expected):
    with pytest.raises(SystemExit) as exit_info:
        rlengine.cli.main(words)

    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.count("\n") == 1 and expected in err, err


def test_the_legacy_install_script_requirement_does_not_reach_pkg_resources():
    """``setup.py develop`` writes a script with ``__requires__``; pkg_resources (which pygame imports) would then
    check every installed distribution's dependencies and stop the command on one it cannot find."""
    if importlib.util.find_spec("pkg_resources") is None:  # an environment without setuptools has no such check
        pytest.skip("pkg_resources (setuptools) is not installed here")
    code = ("import sys\n__requires__ = 'no-such-distribution-of-rlengine-tests'\n"
            "sys.argv = ['rlengine', '--version']\nfrom rlengine import cli\nstatus = cli.main()\n"
            "import warnings\nwarnings.simplefilter('ignore')\nimport pkg_resources\nsys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr[-1500:]
