"""Callbacks: lifecycle-hook classes a plugin registers, each with its own config section, made once per run,
registered with the run's plugin manager for that run only, and switched off one by one."""

import argparse

import attrs
import pytest

import rlengine
from rlengine import hookimpl
from rlengine.commands.plugins import ListPlugins
from rlengine.plugin.manager import build_plugins
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config


@attrs.define
class WatchConfig:
    every: int = attrs.field(default=1, validator=attrs.validators.gt(0))  # iterations between two notes
    label: str = "watch"


class Watch:
    """Notes the hooks it sees (every ``every``-th iteration); fails in the hook named by ``fail_in``."""

    config_class = WatchConfig
    made: list = []  # every instance, in the order made
    fail_in = ""

    def __init__(self, config):
        self.config = config
        self.calls: list[str] = []
        Watch.made.append(self)

    def _note(self, name):
        if Watch.fail_in == name:
            raise ValueError(f"{self.config.label} fails in {name} as asked")
        self.calls.append(name)

    @hookimpl
    def rlengine_train_start(self, run):
        self._note("train_start")

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if iteration % self.config.every == 0:
            self._note(f"iteration_end:{iteration}")

    @hookimpl
    def rlengine_evaluation_end(self, run, iteration, metrics):
        self._note(f"evaluation_end:{iteration}")

    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        self._note(f"checkpoint_saved:{iteration}")

    @hookimpl
    def rlengine_train_end(self, run, error):
        self._note("train_end" if error is None else f"train_end:{type(error).__name__}")


class Watchers:
    """A plugin registering a writer and the ``watch`` callback: switching the callback off keeps the writer."""

    def __init__(self, callbacks=(("watch", Watch),)):
        self.callbacks = callbacks

    @hookimpl
    def rlengine_register_writers(self, register):
        register("watch-memory", MemoryWriter)

    @hookimpl
    def rlengine_register_callbacks(self, register):
        for name, cls in self.callbacks:
            register(name, cls)


@pytest.fixture(autouse=True)
def _fresh_watch():
    Watch.made, Watch.fail_in = [], ""
    yield
    Watch.made, Watch.fail_in = [], ""


def _plugins(watchers=None):
    plugins = build_plugins(load_entry_points=False,
                            extra_plugins=[("testing", testing_plugin()), ("watchers", watchers or Watchers())])
    plugins.raise_failures()
    return plugins


def _engine(tmp_path, plugins, sections=None, **train):
    raw = tiny_config(str(tmp_path / "run"), writers=["watch-memory"], **train)
    return rlengine.Engine({**raw, **(sections or {})}, plugins=plugins)


def test_register_callbacks_hook_makes_an_instance_that_sees_every_lifecycle_hook_with_its_section(tmp_path):
    plugins = _plugins()
    result = _engine(tmp_path, plugins, {"watch": {"every": 2}}, checkpoint_interval=4).train()

    assert result.iterations == 4
    [watch] = Watch.made
    assert watch.config == WatchConfig(every=2)
    assert watch.calls == ["train_start", "iteration_end:2", "evaluation_end:2", "iteration_end:4",
                           "evaluation_end:4", "checkpoint_saved:4", "train_end"]
    assert "[watch]\nevery = 2" in (tmp_path / "run" / "config.toml").read_text()  # the effective config has it


def test_a_bad_key_or_value_of_the_callback_section_is_one_line_naming_it(tmp_path):
    plugins = _plugins()
    with pytest.raises(rlengine.ConfigError, match=r"^unknown config key watch\.evry; \[watch\] takes: every, "
                                                   r"label\. Did you mean 'every'\?$"):
        _engine(tmp_path, plugins, {"watch": {"evry": 2}})
    with pytest.raises(rlengine.ConfigError, match=r"^invalid value in \[watch\]: 'every' must be > 0: 0$"):
        _engine(tmp_path, plugins, {"watch": {"every": 0}})
    assert not (tmp_path / "run").exists() and Watch.made == []


def test_a_switched_off_callback_is_not_made_while_the_rest_of_its_plugin_stays(tmp_path):
    plugins = _plugins()
    _engine(tmp_path, plugins, disabled_callbacks=["watch"]).train()

    assert Watch.made == []
    assert len(MemoryWriter.last.rows) >= 4  # the plugin's writer still wrote every row


def test_a_switched_off_name_that_no_plugin_registered_is_refused_with_close_matches(tmp_path):
    plugins = _plugins()
    with pytest.raises(rlengine.ConfigError, match=r"^train\.disabled_callbacks names 'wach', which is no "
                                                   r"registered callback; registered: watch\. Did you mean 'watch'\?$"):
        _engine(tmp_path, plugins, disabled_callbacks=["wach"]).train()
    assert not (tmp_path / "run").exists()


def test_the_instance_is_unregistered_when_the_run_ends_and_the_next_run_gets_a_new_one(tmp_path):
    plugins = _plugins()
    before = set(plugins.manager.get_plugins())
    engine = _engine(tmp_path, plugins)
    engine.train()
    assert set(plugins.manager.get_plugins()) == before and plugins.callbacks == {}

    engine.config = attrs.evolve(engine.config, train=attrs.evolve(engine.config.train, num_env_steps=48))
    engine.force = True
    engine.train()  # resumes the same root dir for two more iterations
    first, second = Watch.made
    assert first is not second
    assert first.calls[-1] == "train_end" and second.calls[0] == "train_start"
    assert "iteration_end:5" in second.calls and "iteration_end:5" not in first.calls
    assert set(plugins.manager.get_plugins()) == before


def test_a_failing_callback_is_one_line_naming_it_and_is_unregistered_all_the_same(tmp_path):
    plugins = _plugins()
    Watch.fail_in = "iteration_end:2"
    with pytest.raises(rlengine.PluginError) as caught:
        _engine(tmp_path, plugins).train()

    message = str(caught.value)
    assert message.startswith("callback 'watch' of plugin 'watchers' (in-process) raised in hook "
                              "rlengine_iteration_end: ValueError: watch fails in iteration_end:2 as asked")
    assert "switch it off with --set 'train.disabled_callbacks=[\"watch\"]'" in message
    assert "\n" not in message
    assert Watch.made[0].calls[-1] == "train_end:PluginError"  # it saw the end of the run it broke
    assert plugins.callbacks == {} and plugins.manager.get_plugin("callback:watch") is None


def test_a_callback_that_cannot_be_made_stops_the_start_with_one_line(tmp_path):
    class Broken(Watch):
        def __init__(self, config):
            raise RuntimeError("no connection")

    plugins = _plugins(Watchers((("broken", Broken),)))
    with pytest.raises(rlengine.PluginError, match=r"^callback 'broken' of plugin 'watchers' \(in-process\) could "
                                                   r"not be made for the run: RuntimeError: no connection \(fix"):
        _engine(tmp_path, plugins).train()
    assert not (tmp_path / "run").exists()


class Configures:
    @hookimpl
    def rlengine_configure(self, config):
        return None


class Empty:
    pass


@pytest.mark.parametrize("registered, message", [
    (Configures, r"callback 'odd' of plugin 'watchers' \(in-process\) implements rlengine_configure, which a "
                 r"callback cannot: .* \(implement rlengine_configure in the plugin's module instead\)$"),
    (Empty, r"callback 'odd' of plugin 'watchers' \(in-process\) implements no lifecycle hook: decorate a method"),
    (Watch(WatchConfig()), r"callback 'odd' of plugin 'watchers' \(in-process\) is registered as <.*Watch object .*>, "
                           r"which is not a class: register the class"),
])
def test_what_is_not_a_callback_class_is_refused_before_anything_is_built(tmp_path, registered, message):
    plugins = _plugins(Watchers((("odd", registered),)))
    with pytest.raises(rlengine.RegistryError, match=message):
        _engine(tmp_path, plugins).train()
    assert not (tmp_path / "run").exists()


def test_rlengine_plugins_lists_callbacks_with_their_plugin_and_origin(capsys):
    args = argparse.Namespace(plugins=_plugins(), json=False, check=False, debug=False, disable_plugin=[])
    assert ListPlugins().run(args) == 0

    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("watchers")]
    assert row.split() == ["watchers", "in-process", "writers:", "watch-memory;", "callbacks:", "watch"]
