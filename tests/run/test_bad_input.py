"""Bad input stops ``rlengine train`` with exit status 2 and ONE stderr line naming the culprit."""

import pytest

from rlengine import hookimpl
from rlengine.cli import main
from rlengine.plugin import manager
from rlengine.testing import HookRecorder, testing_plugin

TINY = ["--algorithm", "toy", "--env", "counting", "--num-env-steps", "32",
        "--set", 'train.writers=["memory"]', "--set", "train.eval_interval=0"]


def run_cli(capsys, *argv):
    """(exit status, the stderr lines) of ``rlengine ARGV``, run in-process."""
    status = main(list(argv))
    return status, capsys.readouterr().err.strip().splitlines()


def one_error_line(capsys, *argv) -> str:
    status, lines = run_cli(capsys, *argv)
    assert status == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("rlengine: error: ")
    return lines[0]


@pytest.fixture
def with_plugins(monkeypatch):
    """Make the CLI load the testing plugin and the given in-process plugins too."""
    real = manager.build_plugins

    def install(*extra):
        def build(disabled=(), extra_plugins=(), load_entry_points=True):
            plugins = [("testing", testing_plugin()), *extra, *extra_plugins]
            return real(disabled=disabled, extra_plugins=plugins, load_entry_points=load_entry_points)

        monkeypatch.setattr(manager, "build_plugins", build)

    return install


# -- config ------------------------------------------------------------------------------------


def test_malformed_toml_names_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('[train]\nseed = 1\nnum_envs 4\n')
    line = one_error_line(capsys, "train", str(path))
    assert str(path) in line and "line 3" in line


def minimal_config(tmp_path) -> str:
    """A config with only [train]: the embedded demo's [ppo] section needs the algorithms plugin."""
    path = tmp_path / "minimal.toml"
    path.write_text("[train]\nseed = 0\n")
    return str(path)


def test_unknown_config_key_is_named_with_a_close_match(tmp_path, capsys):
    line = one_error_line(capsys, "train", minimal_config(tmp_path), "--set", "train.num_env=4",
                          "--root-dir", str(tmp_path))
    assert "train.num_env" in line and "'num_envs'" in line


def test_unknown_key_in_a_toml_file_is_named(tmp_path, capsys):
    path = tmp_path / "typo.toml"
    path.write_text('[train]\nunrol_length = 8\n')
    line = one_error_line(capsys, "train", str(path))
    assert "train.unrol_length" in line and "'unroll_length'" in line


def test_ill_typed_config_key_is_named_with_the_expected_type(tmp_path, capsys):
    line = one_error_line(capsys, "train", minimal_config(tmp_path), "--set", "train.num_envs=many",
                          "--root-dir", str(tmp_path))
    assert "train.num_envs" in line and "must be int" in line and "'many'" in line


def test_out_of_range_value_is_named(tmp_path, capsys):
    line = one_error_line(capsys, "train", minimal_config(tmp_path), "--set", "train.max_nonfinite_updates=0",
                          "--root-dir", str(tmp_path))
    assert "max_nonfinite_updates" in line


def test_unknown_config_section_is_named(tmp_path, capsys):
    line = one_error_line(capsys, "train", minimal_config(tmp_path), "--set", "trian.seed=1",
                          "--root-dir", str(tmp_path))
    assert "[trian]" in line and "'train'" in line


# -- environments and algorithms (first-party plugins) --------------------------------------


@pytest.mark.first_party
def test_unknown_env_id_suggests_close_matches(tmp_path, capsys):
    line = one_error_line(capsys, "train", "--env", "CartPol-v1", "--root-dir", str(tmp_path))
    assert "'CartPol-v1'" in line and "CartPole-v1" in line


@pytest.mark.first_party
def test_unknown_algorithm_suggests_close_matches(tmp_path, capsys):
    line = one_error_line(capsys, "train", "--algorithm", "ppo2", "--root-dir", str(tmp_path))
    assert "'ppo2'" in line and "'ppo'" in line


@pytest.mark.first_party
def test_dqn_on_continuous_actions_is_refused(tmp_path, capsys):
    line = one_error_line(capsys, "train", "--algorithm", "dqn", "--env", "Pendulum-v1", "--root-dir", str(tmp_path))
    assert "'dqn'" in line and "Discrete" in line and "'sac'" in line


@pytest.mark.first_party
def test_sac_on_discrete_actions_is_refused(tmp_path, capsys):
    line = one_error_line(capsys, "train", "--algorithm", "sac", "--env", "CartPole-v1", "--root-dir", str(tmp_path))
    assert "'sac'" in line and "Discrete" in line and "'dqn'" in line


# -- plugins raising inside hooks --------------------------------------------------------------


class RaisesIn:
    """A plugin whose implementation of one lifecycle hook raises."""

    def __init__(self, hook_name):
        def raising(**kwargs):
            raise RuntimeError(f"boom in {hook_name}\nsecond line")

        self.hook_name = hook_name
        setattr(self, hook_name, hookimpl(specname=hook_name)(raising))


@pytest.mark.parametrize("hook_name", ["rlengine_train_start", "rlengine_iteration_end",
                                       "rlengine_evaluation_end", "rlengine_checkpoint_saved",
                                       "rlengine_train_end", "rlengine_configure"])
def test_a_plugin_raising_in_a_hook_is_named_with_the_hook(tmp_path, capsys, with_plugins, hook_name):
    with_plugins(("broken", RaisesIn(hook_name)))
    argv = [*TINY, "--set", "train.eval_interval=2"] if hook_name == "rlengine_evaluation_end" else TINY
    line = one_error_line(capsys, "train", *argv, "--root-dir", str(tmp_path))
    assert "plugin 'broken'" in line and f"hook {hook_name}" in line
    assert "RuntimeError: boom in" in line and "second line" not in line
    assert "--disable-plugin broken" in line


def test_train_end_sees_the_plugin_error(tmp_path, capsys, with_plugins):
    recorder = HookRecorder()
    with_plugins(("broken", RaisesIn("rlengine_iteration_end")), ("recorder", recorder))
    one_error_line(capsys, "train", *TINY, "--root-dir", str(tmp_path))
    assert recorder.calls[-1] == "train_end:PluginError"


def test_the_other_plugins_still_run_and_the_hook_result_is_kept(tmp_path, with_plugins):
    # a guarded hook call returns what pluggy returns: a list of results, one per implementation
    from rlengine.plugin.manager import build_plugins

    class Answers:
        @hookimpl
        def rlengine_train_start(self, run):
            return 42

    plugins = build_plugins(load_entry_points=False, extra_plugins=[("answers", Answers())])
    assert plugins.hook.rlengine_train_start(run=None) == [42]
    assert [i.plugin_name for i in plugins.hook.rlengine_train_start.get_hookimpls()] == ["answers"]


def test_a_user_error_raised_by_a_plugin_passes_unchanged(tmp_path, capsys, with_plugins):
    from rlengine.errors import ConfigError

    class Refuses:
        @hookimpl
        def rlengine_train_start(self, run):
            raise ConfigError("[refuses] needs key x; set it with --set refuses.x=1")

    with_plugins(("refuses", Refuses()))
    line = one_error_line(capsys, "train", *TINY, "--root-dir", str(tmp_path))
    assert line == "rlengine: error: [refuses] needs key x; set it with --set refuses.x=1"
