"""Start-up: the seconds per phase a run reports once, and no evaluation copies for a run that never evaluates."""

import subprocess
import sys

import pytest

from rlengine.run.engine import Engine
from rlengine.run.process import startup
from rlengine.testing import MemoryWriter, TrackedCountingEnv, testing_plugin, tiny_config, tracked_env_plugin

PHASES = ["startup/config", "startup/build", "startup/restore", "startup/first_iteration"]


def _engine(tmp_path, extra=(), force=False, **train):
    return Engine(tiny_config(str(tmp_path), **train), extra_plugins=[("testing", testing_plugin()), *extra],
                  force=force)


def test_the_first_row_reports_each_phase_and_their_sum(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "_imports_reported", False)  # as in a fresh process: its first Engine
    engine = _engine(tmp_path)
    result = engine.train()
    first, *rest = MemoryWriter.last.rows
    reported = {key: value for key, value in first.items() if key.startswith("startup/")}
    assert list(reported) == ["startup/imports", *PHASES, "startup/total"]
    assert all(value >= 0 for value in reported.values())
    assert reported["startup/imports"] > 0  # this process started before the test did
    assert sum(reported[key] for key in ["startup/imports", *PHASES]) == pytest.approx(reported["startup/total"])
    assert first["iteration"] == 1 and result.startup == reported
    assert not any(key.startswith("startup/") for row in rest for key in row)  # once per run


def test_a_later_engine_of_the_process_reports_no_imports(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "_imports_reported", True)  # an Engine of this process came before
    engine = _engine(tmp_path, summary_interval=3)
    first = engine.train()
    assert MemoryWriter.last.rows[0]["iteration"] == 1  # written though summaries come every 3 iterations
    assert "startup/imports" not in first.startup and list(first.startup) == [*PHASES, "startup/total"]
    assert sum(first.startup[key] for key in PHASES) == pytest.approx(first.startup["startup/total"])
    assert engine.train().startup == {}  # trained again (finished already: no iteration), nothing to report
    more = Engine(tiny_config(str(tmp_path), num_env_steps=48, summary_interval=3),
                  extra_plugins=[("testing", testing_plugin())], force=True)
    resumed = more.train()
    assert resumed.startup and "startup/imports" not in resumed.startup  # a new Engine, resumed: its own start-up
    assert resumed.iterations > first.iterations


def test_process_age_counts_from_the_process_start():
    code = ("import time; time.sleep(0.5); import importlib.util, sys; "
            "spec = importlib.util.spec_from_file_location('s', sys.argv[1]); m = importlib.util.module_from_spec(spec); "
            "spec.loader.exec_module(m); print(m.process_age())")
    out = subprocess.run([sys.executable, "-c", code, startup.__file__], capture_output=True, text=True, check=True)
    age = float(out.stdout)
    assert 0.5 <= age < 30


def test_a_run_that_never_evaluates_makes_no_evaluation_copies_and_can_still_be_evaluated(tmp_path):
    TrackedCountingEnv.made = []
    extra = [("tracked", tracked_env_plugin())]
    result = _engine(tmp_path, extra, env="tracked", eval_interval=0).train()
    assert [env.num_envs for env in TrackedCountingEnv.made] == [2]  # the training copies only
    assert result.eval_history == () and result.iterations == 4
    resumed = _engine(tmp_path, extra, True, env="tracked", eval_interval=0, num_env_steps=48).train()  # resumes
    assert resumed.iterations == 6
    TrackedCountingEnv.made = []
    scores = _engine(tmp_path, extra, env="tracked", eval_interval=0, num_env_steps=48).evaluate(num_episodes=2)
    assert scores["eval/episodes"] == 2.0  # evaluating on demand builds its copies
    assert sorted(env.num_envs for env in TrackedCountingEnv.made) == [2, 2]
    assert all(env.closed for env in TrackedCountingEnv.made)


_GC_AFTER_IMPORT = """
import gc, sys
from rlengine import quiet_tensorflow
if sys.argv[1] == "ours":
    quiet_tensorflow.own_the_process()
quiet_tensorflow.import_tensorflow()
print(gc.isenabled(), gc.get_freeze_count())
"""


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("whose", ["ours", "a user's"])
def test_tensorflow_imported_by_the_command_line_is_frozen_and_nowhere_else(whose):
    """The command line's process imports TensorFlow without collecting and freezes what it imported
    (0.5 s of the import); a user's program keeps its collector as it was."""
    out = subprocess.run([sys.executable, "-c", _GC_AFTER_IMPORT, whose], capture_output=True, text=True, check=True)
    enabled, frozen = out.stdout.split()
    assert enabled == "True"
    assert int(frozen) > 100_000 if whose == "ours" else int(frozen) == 0


def test_the_command_line_called_from_a_program_leaves_its_collector_alone(capsys):
    import gc

    from rlengine import cli, quiet_tensorflow

    frozen = gc.get_freeze_count()
    assert cli.main(["--version"]) == 0
    assert not quiet_tensorflow._process_is_ours and gc.get_freeze_count() == frozen and gc.isenabled()


def test_the_command_line_as_the_program_owns_its_process():
    code = ("import sys; from rlengine import cli, quiet_tensorflow; sys.argv = ['rlengine', '--version']; "
            "cli.main(); print(quiet_tensorflow._process_is_ours)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "True"
