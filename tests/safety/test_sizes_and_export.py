"""Never lose a run, part two: sizes checked before anything is built, exports that touch only their own.

* Network sizes: a zero layer width aborted the process inside oneDNN (exit
  134, no Python error) and a negative one was a long traceback; every size
  of every first-party algorithm is now validated with its config.
* Replay buffers are sized before they are allocated: one the machine cannot
  hold is refused with the figure, one that takes over half of it is warned
  about.
* ``rlengine export`` replaces only an earlier export holding nothing but
  what it wrote, swaps the new one in atomically, and clears (or restores)
  what a killed export left beside the directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import attrs
import pytest
import tensorflow as tf

from rlengine import ConfigError, Engine, RLEngineError, hookimpl
from rlengine.api.data import Experience
from rlengine.config import make_section
from rlengine.learn.replay.buffer import ReplayBuffer
from rlengine.plugin.manager import build_plugins
from rlengine.run.process import memory
from rlengine.testing import ToyQAlgorithm, testing_plugin, tiny_config

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``rlengine ARGS`` in a fresh process (a process-killing abort must not take the tests with it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLENGINE_")}
    return subprocess.run([sys.executable, "-m", "rlengine.cli", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


def assert_one_error_line(stderr: str, *fragments: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rlengine: error: "), stderr[-3000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# -- network sizes -------------------------------------------------------------------------------
def first_party_algorithm_configs() -> list:
    """(section, config class) of every algorithm a first-party plugin registers."""
    plugins = build_plugins()
    out = []
    for entry in plugins.registries.algorithms:
        cls = entry.obj
        config_class = getattr(cls, "config_class", None)
        if cls.__module__.startswith("rlengine_") and attrs.has(config_class):
            out.append((entry.name, config_class))
    return sorted(out, key=lambda pair: pair[0])


@pytest.mark.first_party
def test_a_zero_layer_width_is_one_config_error_not_an_abort(tmp_path):
    """The probe's case: ``ppo.hidden_sizes = [0]`` ended the process with SIGABRT in oneDNN."""
    done = run_cli("train", "--set", "ppo.hidden_sizes=[0]", "--set", "train.num_env_steps=64",
                   "--set", f"train.root_dir={json.dumps(str(tmp_path / 'run'))}")

    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert_one_error_line(done.stderr, "[ppo]", "'hidden_sizes' must be a list of positive integers", "[0]")


@pytest.mark.first_party
@pytest.mark.parametrize("widths", [[0], [-4], [64, 0], [64.5], [True], ["64"]])
def test_every_first_party_layer_width_list_refuses_a_bad_width(widths):
    configs = first_party_algorithm_configs()
    checked = 0
    for section, config_class in configs:
        for field in attrs.fields(config_class):
            if not field.name.endswith("sizes"):
                continue
            with pytest.raises(ConfigError) as err:
                make_section(section, config_class, {field.name: widths})
            assert f"[{section}]" in str(err.value) and field.name in str(err.value)
            assert "\n" not in str(err.value)
            checked += 1
    assert checked >= 5  # ac, ppo, dqn, sac, td3


@pytest.mark.first_party
def test_every_first_party_size_or_count_refuses_a_negative_value():
    """Every int option (layer and LSTM sizes, batch sizes, counts, periods) has a range validator."""
    unchecked = []
    for section, config_class in first_party_algorithm_configs():
        for field in attrs.fields(config_class):
            if field.type not in (int, "int"):
                continue
            try:
                make_section(section, config_class, {field.name: -1})
            except ConfigError as err:
                assert field.name in str(err) and "\n" not in str(err)
            else:
                unchecked.append(f"{section}.{field.name}")
    assert not unchecked


@pytest.mark.first_party
def test_empty_and_positive_widths_are_still_accepted():
    for section, config_class in first_party_algorithm_configs():
        if "hidden_sizes" in attrs.fields_dict(config_class):
            assert make_section(section, config_class, {"hidden_sizes": []}).hidden_sizes == []
            assert make_section(section, config_class, {"hidden_sizes": [3, 5]}).hidden_sizes == [3, 5]


# -- replay buffers sized before allocation ------------------------------------------------------
ROW_SPEC = Experience(step_type=tf.TensorSpec([], tf.int32), reward=tf.TensorSpec([], tf.float32),
                      discount=tf.TensorSpec([], tf.float32), observation=tf.TensorSpec([3, 2], tf.float32),
                      prev_action=tf.TensorSpec([], tf.int64), env_id=tf.TensorSpec([], tf.int32),
                      action=tf.TensorSpec([], tf.int64), rollout_info=(), state=())


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("num_envs,capacity", [(1, 10), (3, 100), (4, 1003)])
def test_bytes_needed_is_what_the_buffer_allocates(prioritized, num_envs, capacity):
    buffer = ReplayBuffer(ROW_SPEC, num_envs, capacity, sequence_length=2, prioritized=prioritized)
    allocated = sum(v.shape.num_elements() * v.dtype.size for v in buffer.variables)

    assert ReplayBuffer.bytes_needed(ROW_SPEC, num_envs, capacity, prioritized) == allocated


class HugeReplay(ToyQAlgorithm):
    replay_capacity = 10 ** 12  # rows: terabytes, more than any test machine has


class HugeReplayPlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("toy-q-huge", HugeReplay)


def toy_q_engine(root: str, algorithm: str) -> Engine:
    config = tiny_config(root, algorithm=algorithm, num_env_steps=16, eval_interval=0)
    return Engine(config, extra_plugins=[("testing", testing_plugin()), ("huge", HugeReplayPlugin())])


def test_a_replay_buffer_bigger_than_memory_is_refused_with_the_figure(tmp_path):
    with pytest.raises(ConfigError) as err:
        toy_q_engine(str(tmp_path / "run"), "toy-q-huge").train()

    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("toy-q-huge.replay_capacity = 1000000000000 needs ")
    assert "TiB for the replay buffer, but only " in message and "lower it to " in message


@pytest.mark.slow  # the CLI end to end (a fresh process, ~10 s); the mechanism has a fast in-process test
@pytest.mark.first_party
def test_the_probe_replay_capacity_is_one_line_not_out_of_memory(tmp_path):
    """The probe's case: ``dqn.replay_capacity = 1e10`` was an out-of-memory traceback."""
    done = run_cli("train", "--set", "train.algorithm=dqn", "--set", "dqn.replay_capacity=10000000000",
                   "--set", "train.num_env_steps=64", "--set", 'train.writers=["jsonl"]',
                   "--set", f"train.root_dir={json.dumps(str(tmp_path / 'run'))}")

    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert_one_error_line(done.stderr, "dqn.replay_capacity = 10000000000 needs ", "for the replay buffer",
                          "of memory is available")


def test_a_replay_buffer_over_half_the_memory_is_warned_about(tmp_path, monkeypatch, capsys):
    """The probe's 2e8 rows (8 GB) were taken silently; here the machine is made to have 1.5x the buffer."""
    spec_bytes = {}
    real = ReplayBuffer.bytes_needed

    def recording(*args, **kwargs):
        spec_bytes["needed"] = real(*args, **kwargs)
        return spec_bytes["needed"]

    monkeypatch.setattr(ReplayBuffer, "bytes_needed", staticmethod(recording))
    monkeypatch.setattr(memory, "available_bytes", lambda: int(1.5 * spec_bytes["needed"]))
    result = toy_q_engine(str(tmp_path / "run"), "toy-q").train()

    warnings = [line for line in capsys.readouterr().err.splitlines() if "replay_capacity" in line]
    assert result.env_steps >= 16  # a warning, not a refusal: the run trained
    assert len(warnings) == 1 and warnings[0].startswith("rlengine: warning: toy-q.replay_capacity = 64 needs ")
    assert "over half of the" in warnings[0] and "lower it to" in warnings[0]


def test_available_memory_is_the_smallest_known_limit(monkeypatch):
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 8 << 30)
    monkeypatch.setattr(memory, "_cgroup_available", lambda: 2 << 30)  # a container's limit
    assert memory.available_bytes() == 2 << 30
    monkeypatch.setattr(memory, "_cgroup_available", lambda: None)
    assert memory.available_bytes() == 8 << 30
    monkeypatch.setattr(memory, "_meminfo_available", lambda: None)
    monkeypatch.setattr(memory, "_sysconf_available", lambda: None)
    assert memory.available_bytes() is None  # unknown: nothing is refused
    memory.check_fits(10 ** 15, "the replay buffer", "x.replay_capacity", 10 ** 12)


# -- export touches only what is ours ------------------------------------------------------------
def kit_plugins() -> dict:
    return {"extra_plugins": [("testing", testing_plugin())]}


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("toy") / "run")
    Engine(tiny_config(root, num_env_steps=32), **kit_plugins()).train()
    return root


def export(toy_run: str, out) -> dict:
    from rlengine_tools.export import export_run

    return export_run(toy_run, str(out), **kit_plugins())


def staging_entries(out) -> list:
    return sorted(n for n in os.listdir(os.path.dirname(str(out))) if ".rlengine-export-" in n)


def fake_earlier_export(out) -> None:
    """What an export leaves, without TensorFlow: a few files and the marker listing them."""
    from rlengine_tools.export_dir import write_marker

    os.makedirs(os.path.join(out, "variables"))
    for name in ("saved_model.pb", "signature.json", os.path.join("variables", "variables.index")):
        with open(os.path.join(out, name), "w") as f:
            f.write("earlier export")
    write_marker(str(out), {"algorithm": "toy", "env": "counting", "checkpoint": "ckpt-1"})


def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.first_party
def test_export_into_a_folder_with_a_saved_model_and_notes_leaves_both(toy_run, tmp_path):
    """The probe's case: any saved_model.pb made the folder "an earlier export", and the notes went with it."""
    out = tmp_path / "models"
    out.mkdir()
    (out / "saved_model.pb").write_bytes(b"someone else's model")
    (out / "notes.txt").write_text("keep me")

    with pytest.raises(RLEngineError) as err:
        export(toy_run, out)

    assert "\n" not in str(err.value) and "is not an earlier export" in str(err.value) and str(out) in str(err.value)
    assert (out / "notes.txt").read_text() == "keep me"
    assert (out / "saved_model.pb").read_bytes() == b"someone else's model"
    assert staging_entries(out) == []


@pytest.mark.first_party
def test_exporting_again_replaces_the_earlier_export_and_leaves_nothing_beside_it(toy_run, tmp_path):
    out = tmp_path / "model"
    export(toy_run, out)
    (tmp_path / "unrelated").write_text("not ours")  # beside the export: never touched
    first_marker = json.loads((out / "rlengine-export.json").read_text())
    export(toy_run, out)

    marker = json.loads((out / "rlengine-export.json").read_text())
    assert marker["format"] == 1 and "saved_model.pb" in marker["files"] and marker == first_marker
    assert tf.saved_model.contains_saved_model(str(out))
    assert sorted(os.listdir(tmp_path)) == ["model", "unrelated"]  # no staging directory left


@pytest.mark.first_party
def test_a_note_dropped_into_an_earlier_export_is_not_deleted_with_it(toy_run, tmp_path):
    out = tmp_path / "model"
    export(toy_run, out)
    (out / "notes.txt").write_text("how I trained it")

    with pytest.raises(RLEngineError) as err:
        export(toy_run, out)

    assert "\n" not in str(err.value)
    assert "is an earlier export but also holds 'notes.txt'" in str(err.value) and "move it out" in str(err.value)
    assert (out / "notes.txt").read_text() == "how I trained it"
    assert tf.saved_model.contains_saved_model(str(out))  # the earlier export is intact too


@pytest.mark.first_party
def test_an_unmarked_export_of_an_older_version_is_still_replaced(toy_run, tmp_path):
    out = tmp_path / "model"
    export(toy_run, out)
    os.remove(out / "rlengine-export.json")  # exports did not write it before

    export(toy_run, out)

    assert (out / "rlengine-export.json").exists() and tf.saved_model.contains_saved_model(str(out))


@pytest.mark.first_party
def test_staging_directories_of_killed_exports_are_removed_and_live_ones_kept(toy_run, tmp_path):
    out = tmp_path / "model"
    stale = tmp_path / f".model.rlengine-export-tmp-{dead_pid()}"
    stale.mkdir()
    (stale / "saved_model.pb").write_bytes(b"half written")
    live = tmp_path / f".model.rlengine-export-tmp-{os.getppid()}"  # a process that is running
    live.mkdir()
    other = tmp_path / f".other.rlengine-export-tmp-{dead_pid()}"  # another export directory's: not ours to clear
    other.mkdir()

    export(toy_run, out)

    assert not stale.exists() and live.exists() and other.exists()
    assert tf.saved_model.contains_saved_model(str(out))


EXPORT_KILLED_WHILE_WRITING = """
import os, signal, sys
from rlengine_tools import export
from rlengine.testing import testing_plugin

def die(*args):  # the model is written, its marker not yet: a kill in the middle of the export
    os.kill(os.getpid(), signal.SIGKILL)

export.write_marker = die
export.export_run(sys.argv[1], sys.argv[2], extra_plugins=[("testing", testing_plugin())])
"""


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.first_party
def test_an_export_killed_while_writing_keeps_the_earlier_one_and_its_leftovers_are_cleared(toy_run, tmp_path):
    out = tmp_path / "model"
    export(toy_run, out)
    before = json.loads((out / "rlengine-export.json").read_text())
    done = subprocess.run([sys.executable, "-c", EXPORT_KILLED_WHILE_WRITING, toy_run, str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    left = staging_entries(out)
    assert len(left) == 1 and left[0].startswith(".model.rlengine-export-tmp-")  # what a killed export leaves
    assert json.loads((out / "rlengine-export.json").read_text()) == before  # the earlier export is untouched

    export(toy_run, out)

    assert staging_entries(out) == [] and tf.saved_model.contains_saved_model(str(out))


SWAP_KILLED_AFTER_MOVING_THE_OLD_EXPORT_ASIDE = """
import os, signal, sys
from rlengine_tools import export_dir

rename = os.rename

def rename_then_die(src, dst):  # killed between moving the earlier export aside and renaming the new one in
    rename(src, dst)
    os.kill(os.getpid(), signal.SIGKILL)

export_dir.os.rename = rename_then_die
export_dir.swap_in(sys.argv[1], sys.argv[2])
"""


@pytest.mark.first_party
def test_an_export_killed_mid_swap_gives_the_earlier_export_back(tmp_path):
    out, new = str(tmp_path / "model"), str(tmp_path / f".model.rlengine-export-tmp-{dead_pid()}")
    fake_earlier_export(out)
    fake_earlier_export(new)
    done = subprocess.run([sys.executable, "-c", SWAP_KILLED_AFTER_MOVING_THE_OLD_EXPORT_ASIDE, new, out],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    assert not os.path.exists(out)  # the window the kill hit: the earlier export is aside

    from rlengine_tools.export_dir import remove_stale_staging

    remove_stale_staging(out)

    with open(os.path.join(out, "saved_model.pb")) as f:
        assert f.read() == "earlier export"
    assert staging_entries(out) == []  # the unfinished new export is cleared as well


@pytest.mark.first_party
def test_an_export_that_cannot_be_written_is_one_line_and_leaves_nothing(toy_run, tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    out = tmp_path / "a-file" / "model"  # its parent is a file: nothing can be written there

    with pytest.raises(RLEngineError) as err:
        export(toy_run, out)

    assert "\n" not in str(err.value) and str(out) in str(err.value) and "failed" in str(err.value)
    assert sorted(os.listdir(tmp_path)) == ["a-file"] and (tmp_path / "a-file").read_text() == "not a directory"
