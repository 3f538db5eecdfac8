"""What the writers cost a training run (``mlflow``, ``wandb``, ``tensorboard``, the defaults together), at the
default summary interval (every iteration).

SAC on Pendulum-v1 (examples/sac_pendulum.toml: short iterations of 4 env
steps and 4 updates, so a summary row every ~20 ms) trains the same budget
with ``train.writers = ["jsonl"]`` and with ``["jsonl", TRACKER]``, at the
tracker's defaults (each metric at most once a second) and with
``interval_secs = 0`` (every row); variants run one after the other,
repeated in turn, each in a fresh process. Printed per variant (median over
repeats):

* training time (``TrainResult.train_time``: build, tracing, collection and
  updates; evaluation is off) and its difference to the run without a
  tracker, in % of that run's training time;
* the training thread's time in writers and hooks (``time/summaries`` of the
  last row), in % of the training time, and its difference in ms per row:
  what ``write`` costs the loop;
* the CPU time of the run's process and of the processes it waited for (W&B's
  service), which counts the sender thread too, and its difference;
* the tracker's own CPU time: its ``write`` calls on the training thread,
  its sender thread (which imports and starts the tracker) and W&B's service
  process, in % of the training time: unlike the differences of training
  times, this does not depend on what else the machine runs meanwhile;

and, for each tracker, the seconds a fresh process takes to import it and
start a run: a one-off cost of every run, which weighs less the longer it is.
MLflow logs to a SQLite store made beforehand (making its tables once takes
a second or two, which no run after the first pays); W&B runs offline.

    python benchmarks/tracker_cost.py [--num-env-steps 6000] [--repeats 2] [--variants none,mlflow,wandb,...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from rlengine import hookimpl

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "sac_pendulum.toml")
#: variant -> (train.writers, overrides of the tracker's section)
VARIANTS = {
    "none": (["jsonl"], []),
    "mlflow": (["jsonl", "mlflow"], []),  # the defaults: each metric at most once a second
    "wandb": (["jsonl", "wandb"], []),
    "mlflow-every-row": (["jsonl", "mlflow"], ["mlflow.interval_secs=0"]),
    "wandb-every-row": (["jsonl", "wandb"], ["wandb.interval_secs=0"]),
    "tensorboard": (["jsonl", "tensorboard"], []),
    "defaults": (["console", "tensorboard", "jsonl"], []),  # what `rlengine train` writes unless told
}


def child(variant: str, root: str, num_env_steps: int, store: str) -> dict:
    """Train one variant in this process; the figures as a dict."""
    import rlengine

    writers, tracker_overrides = VARIANTS[variant]
    overrides = [f"train.num_env_steps={num_env_steps}", f"train.writers={json.dumps(writers)}", *tracker_overrides,
                 f"train.root_dir={json.dumps(root)}", "train.eval_interval=0", "train.checkpoint_seconds=0",
                 f"mlflow.tracking_uri={json.dumps(store)}", 'mlflow.experiment_name="tracker-cost"',
                 'wandb.mode="offline"', 'wandb.project="tracker-cost"', 'train.disabled_callbacks=["mlflow-policy"]']
    trackers = TrackersOf()
    result = rlengine.Engine(EXAMPLE, overrides, extra_plugins=[("tracker-cost", trackers)]).train()
    with open(os.path.join(root, "metrics.jsonl")) as f:
        last = json.loads(f.readlines()[-1])
    sender_cpu = sum(w._sender.cpu_seconds for w in trackers.writers if w._sender is not None)  # threads ended
    if variant.startswith("wandb"):
        import wandb

        wandb.teardown()  # W&B's service process ends, so its CPU time is counted as a child's
    service = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"variant": variant, "train_time": result.train_time, "iterations": result.iterations,
            "summaries": last["time/summaries"], "sender_cpu": sender_cpu,
            "service_cpu": service.ru_utime + service.ru_stime}


class TrackersOf:
    """Finds the run's tracker writers (to read their sender threads' CPU time once they are closed)."""

    def __init__(self):
        self.writers = []

    @hookimpl
    def rlengine_train_end(self, run, error):
        from rlengine_writers.tracker_writer import TrackerWriter

        self.writers = [w for w in run.internals.writers if isinstance(w, TrackerWriter)]  # a benchmark may look


def make_store(directory: str) -> str:
    """A ready SQLite store (its tables made), so every mlflow run pays the same per-run costs; its experiment
    keeps the artifacts in ``directory`` (MLflow's default is ./mlruns of the working directory)."""
    store = f"sqlite:///{os.path.join(directory, 'mlflow.db')}"
    try:
        import mlflow
    except ImportError:
        return store
    mlflow.MlflowClient(store).create_experiment("tracker-cost", artifact_location=os.path.join(directory, "mlruns"))
    return store


def run_variant(variant: str, directory: str, index: int, num_env_steps: int, store: str) -> dict:
    root = os.path.join(directory, f"{variant}-{index}")
    env = {**os.environ, "WANDB_DIR": directory, "WANDB_SILENT": "true", "MLFLOW_DISABLE_TELEMETRY": "true",
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", variant, "--root", root, "--store",
                          store, "--num-env-steps", str(num_env_steps)], capture_output=True, text=True, env=env,
                         cwd=directory)  # what a tracker writes by default lands in the temp dir
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run's process and those it waited for (W&B's)
    if out.returncode != 0:
        raise SystemExit(f"{variant} run failed:\n{out.stderr[-3000:]}")
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return figures


STARTUP = {
    "mlflow": "import mlflow\nc = mlflow.MlflowClient(STORE)\n"
              "r = c.create_run(c.get_experiment_by_name('tracker-cost').experiment_id).info.run_id\n"
              "c.set_terminated(r)\n",
    "wandb": "import wandb\nrun = wandb.init(project='tracker-cost', mode='offline', reinit='create_new')\nrun.finish()\n",
}


def startup_seconds(tracker: str, directory: str, store: str) -> float:
    """Wall seconds a fresh process takes to import the tracker and start (and end) one run: paid once a run."""
    code = "import time\nt = time.perf_counter()\n" + STARTUP[tracker].replace("STORE", repr(store)) + \
        "print(time.perf_counter() - t)\n"
    env = {**os.environ, "WANDB_DIR": directory, "WANDB_SILENT": "true", "MLFLOW_DISABLE_TELEMETRY": "true"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=directory)
    return float(out.stdout.strip().splitlines()[-1])


def _times(results: list) -> str:
    return ", ".join(f"{r['train_time']:.1f}" for r in results)


def report(results: list, variants: list, startup: dict) -> None:
    by = {v: [r for r in results if r["variant"] == v] for v in variants}
    base = {k: statistics.median(r[k] for r in by["none"]) for k in ("train_time", "summaries", "cpu")}
    rows = max(r["iterations"] for r in results)
    print(f"\nSAC Pendulum-v1, {rows} iterations (one summary row each), median of {len(by['none'])} run(s):")
    print(f"{'variant':<17} {'train s':>8} {'vs none':>8} {'in writers s':>13} {'%':>5} {'ms/row':>7} {'CPU s':>7} "
          f"{'vs none':>8} {'tracker CPU s':>14} {'% of train':>10}")
    for variant in variants:
        train = statistics.median(r["train_time"] for r in by[variant])
        summaries = statistics.median(r["summaries"] for r in by[variant])
        cpu = statistics.median(r["cpu"] for r in by[variant])
        # the tracker's own CPU: its writes on the training thread, its sender thread, W&B's service process
        own = statistics.median(r["summaries"] - base["summaries"] + r["sender_cpu"] + r["service_cpu"]
                                for r in by[variant])
        print(f"{variant:<17} {train:8.1f} {100 * (train - base['train_time']) / base['train_time']:+7.1f}% "
              f"{summaries:13.2f} {100 * summaries / train:4.1f}% "
              f"{1000 * (summaries - base['summaries']) / rows:+7.3f} {cpu:7.1f} "
              f"{100 * (cpu - base['cpu']) / base['cpu']:+7.1f}% {own:14.2f} {100 * own / train:9.1f}%")
    print("every run's training time, s: " + "; ".join(f"{v} {_times(by[v])}" for v in variants))
    for tracker, seconds in startup.items():
        print(f"{tracker}: import and start a run in a fresh process: {seconds:.2f} s, paid once per run "
              f"({100 * seconds / base['train_time']:.1f}% of this run's training time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-env-steps", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child")
    parser.add_argument("--root")
    parser.add_argument("--store")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.root, args.num_env_steps, args.store)))
        return
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    if variants[0] != "none":
        variants.insert(0, "none")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="tracker-cost-") as directory:
        store = make_store(directory)
        results = []
        for index in range(args.repeats):
            for variant in variants:
                t0 = time.perf_counter()
                results.append(run_variant(variant, directory, index, args.num_env_steps, store))
                print(f"  {variant} #{index + 1}: training {results[-1]['train_time']:.1f} s "
                      f"({time.perf_counter() - t0:.0f} s with start-up)", flush=True)
        startup = {t: startup_seconds(t, directory, store) for t in ("mlflow", "wandb")
                   if any(v.startswith(t) for v in variants)}
        report(results, variants, startup)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
