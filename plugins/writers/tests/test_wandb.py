"""The ``wandb`` writer in offline mode: the run's files record the config and every row at step env_steps."""

import json
import struct
import time

import pytest

wandb = pytest.importorskip("wandb")
import rlengine_writers.plugin  # noqa: E402
from rlengine_writers.wandb_writer import RUN_FILE  # noqa: E402
from wandb.proto import wandb_internal_pb2  # noqa: E402

import rlengine  # noqa: E402
from rlengine.plugin.manager import build_plugins  # noqa: E402
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config  # noqa: E402
from rlengine.testing.failing import FailAt  # noqa: E402

BLOCK = 32768  # the .wandb file is a LevelDB-style log: 32 KiB blocks of [crc32, length, type] + data chunks


def read_records(path):
    """The protobuf records of an offline run's ``run-<id>.wandb`` file."""
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, pos = [], b"", 7  # the file header: magic, 2-byte tag, version
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:  # a block's tail too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk  # full/first start a record, middle/last extend it
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def history(records):
    """``[(step, {key: value})]`` of the history records."""
    out = []
    for record in records:
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            out.append((record.history.step.num, items))
    return out


def exit_codes(records):
    return [r.exit.exit_code for r in records if r.WhichOneof("record_type") == "exit"]


def run_config(records):
    [run] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    return {item.key: json.loads(item.value_json) for item in run.config.update}


@pytest.fixture
def wandb_dir(tmp_path, monkeypatch):
    directory = tmp_path / "wandb-files"
    monkeypatch.setenv("WANDB_DIR", str(directory))
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_RUN_ID", "WANDB_RESUME"):
        monkeypatch.delenv(name, raising=False)
    yield directory
    wandb.teardown()  # stops W&B's service process


def _engine(root, *extra, **train):
    raw = tiny_config(str(root), writers=["memory", "wandb"], **train)
    raw["wandb"] = {"mode": "offline", "project": "rlengine-tests", "interval_secs": 0, "flush_secs": 0.2}  # every row
    plugins = build_plugins(load_entry_points=False, extra_plugins=[
        ("testing", testing_plugin()), ("writers", rlengine_writers.plugin), *extra])
    return rlengine.Engine(raw, plugins=plugins)


def _offline_runs(directory, run_id):
    return sorted((directory / "wandb").glob(f"offline-run-*-{run_id}/run-{run_id}.wandb"))


def test_the_offline_run_records_the_config_and_every_row_at_its_env_steps(tmp_path, wandb_dir):
    root = tmp_path / "run"
    _engine(root).train()
    rows = MemoryWriter.last.rows

    run_id = json.loads((root / RUN_FILE).read_text())["run_id"]
    [path] = _offline_runs(wandb_dir, run_id)
    records = read_records(path)
    config = run_config(records)
    assert config["train"]["algorithm"] == "toy" and config["train"]["writers"] == ["memory", "wandb"]
    assert config["wandb"]["mode"] == "offline"
    logged = history(records)
    assert [step for step, _ in logged] == [8, 16, 24, 32]  # an evaluation row joins the row of its step
    for step, items in logged:
        row = next(r for r in rows if r["env_steps"] == step and "loss/total" in r)
        assert items["loss/total"] == pytest.approx(row["loss/total"])
        assert "env_steps" not in items and "iteration" not in items  # they index the rows
    evaluated = {r["env_steps"]: r["eval/average_return"] for r in rows if "eval/average_return" in r}
    assert {step: items["eval/average_return"] for step, items in logged if "eval/average_return" in items} == evaluated


def test_the_console_carries_one_line_of_ours_about_wandb_not_its_banner_and_summary(tmp_path, wandb_dir,
                                                                                      monkeypatch, capfd):
    monkeypatch.delenv("WANDB_SILENT")  # as a user runs it: W&B printed 34 lines for an offline run
    wandb_dir.mkdir()  # W&B warns of a WANDB_DIR that does not exist yet (a warning is W&B's to say)
    root = tmp_path / "run"
    _engine(root).train()
    wandb.teardown()

    run_id = json.loads((root / RUN_FILE).read_text())["run_id"]
    [files] = (wandb_dir / "wandb").glob(f"offline-run-*-{run_id}")
    captured = capfd.readouterr()
    about_wandb = [line for line in (captured.out + captured.err).splitlines() if "wandb" in line.lower()]
    assert about_wandb == [f"rlengine: wandb: offline run {run_id} in {files}; upload it with: wandb sync {files}"]


@pytest.mark.parametrize("variable", ["WANDB_SILENT", "WANDB_QUIET"])
def test_how_much_wandb_says_is_the_users_once_they_set_it(monkeypatch, variable):
    from rlengine_writers.wandb_writer import _quiet_unless_asked

    for name in ("WANDB_SILENT", "WANDB_QUIET"):
        monkeypatch.delenv(name, raising=False)
    assert _quiet_unless_asked()
    monkeypatch.setenv(variable, "false")
    assert not _quiet_unless_asked()


def test_a_resumed_run_continues_the_same_wandb_run(tmp_path, wandb_dir):
    root = tmp_path / "run"
    with pytest.raises(rlengine.PluginError, match="stop at iteration 2"):
        _engine(root, ("fail", FailAt(2))).train()
    run_id = json.loads((root / RUN_FILE).read_text())["run_id"]
    time.sleep(1.1)  # W&B names an offline run's folder by the second it started: a part each
    _engine(root).train()  # the same config: resumes from the checkpoint of iteration 2

    assert json.loads((root / RUN_FILE).read_text())["run_id"] == run_id
    first, resumed = _offline_runs(wandb_dir, run_id)  # offline, each process writes its own part of the run
    assert [step for step, _ in history(read_records(first))] == [8, 16]
    assert exit_codes(read_records(first)) == [1] and exit_codes(read_records(resumed)) == [0]  # failed, finished
    assert [step for step, _ in history(read_records(resumed))] == [24, 32]
    [run] = [r.run for r in read_records(resumed) if r.WhichOneof("record_type") == "run"]
    assert run.run_id == run_id
