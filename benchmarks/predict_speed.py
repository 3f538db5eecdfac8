"""Speed of ``rlengine.load(run).predict(obs)`` on a CartPole PPO run, and of SB3's ``PPO.predict`` beside it.

Prints:

* seconds from ``import rlengine`` to the first ``predict`` returning, in a
  fresh process each trial: with the converted policy cached beside the
  checkpoint by an earlier load (LiteRT and NumPy, no TensorFlow imported),
  and without (the first load of a checkpoint: TensorFlow, build, restore);
* ``predict`` calls per second for one observation and for a batch of 64, on
  LiteRT's interpreter (the default), on TensorFlow's ``tf.lite`` interpreter
  (what runs where ``ai_edge_litert`` is not installed) and on TensorFlow
  (``backend="tensorflow"``), and sampling (``deterministic=False``) on each;
* the same for Stable-Baselines3 (``PPO.load(zip).predict``, same 64x64 MLP,
  torch on one thread like the interpreter) when its venv exists
  (``../shared/peers/README.md``: /tmp/peers/sb3), measured in subprocesses
  of this run, the first-call trials interleaved with rlengine's.

Without ``--run`` it trains a short PPO CartPole-v1 run (4,096 env steps,
about 10 s) into a temporary directory first. Run it on a quiet machine::

    python benchmarks/predict_speed.py [--run runs/ppo-CartPole-v1-...] [--calls 5000] [--trials 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Iterator

SB3_PYTHON = "/tmp/peers/sb3/bin/python"

FIRST_CALL = """
import time
start = time.perf_counter()
import sys
import numpy as np
import rlengine
policy = rlengine.load({run!r})
policy.predict(np.zeros(4, np.float32))
print(time.perf_counter() - start, "tensorflow" in sys.modules)
"""

SB3_SCRIPT = """
import json, sys, time
mode, path, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "save":
    from stable_baselines3 import PPO
    PPO("MlpPolicy", "CartPole-v1", seed=0).save(path)
    sys.exit()
start = time.perf_counter()
import numpy as np
import torch
from stable_baselines3 import PPO
torch.set_num_threads(1)  # torch's pool collapses on a busy 2-core machine (a batch of 64 fell to 300 calls/s)
model = PPO.load(path, device="cpu")
model.predict(np.zeros(4, np.float32), deterministic=True)
first = time.perf_counter() - start
if mode == "first":
    print(json.dumps({"first": first}))
    sys.exit()
rng = np.random.default_rng(0)
single, batch = rng.normal(size=4).astype(np.float32), rng.normal(size=(64, 4)).astype(np.float32)
def rate(fn, n):
    for _ in range(100):
        fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t)
print(json.dumps({"single": rate(lambda: model.predict(single, deterministic=True), calls),
                  "batch": rate(lambda: model.predict(batch, deterministic=True), calls // 4),
                  "sample": rate(lambda: model.predict(single, deterministic=False), calls)}))
"""

BACKENDS = {"litert": "LiteRT (default)", "tf.lite": "tf.lite interpreter", "tensorflow": "TensorFlow"}


def train_run(directory: str) -> str:
    root = os.path.join(directory, "ppo-cartpole")
    subprocess.run([sys.executable, "-m", "rlengine.cli", "train", "--num-env-steps", "4096", "--root-dir", root,
                    "--set", 'train.writers=["jsonl"]'], check=True, stdout=subprocess.DEVNULL)
    return root


def first_call(run: str) -> tuple[float, bool]:
    """``(seconds, whether TensorFlow was imported)`` from ``import rlengine`` to the first predict."""
    out = subprocess.run([sys.executable, "-c", FIRST_CALL.format(run=run)], check=True, capture_output=True,
                         text=True)
    seconds, imported = out.stdout.strip().splitlines()[-1].split()
    return float(seconds), imported == "True"


def remove_caches(run: str) -> None:
    from rlengine.policy.cache import SUFFIX

    for root, _, files in os.walk(os.path.join(run, "checkpoints")):
        for name in files:
            if name.endswith(SUFFIX):
                os.remove(os.path.join(root, name))


def rate(fn, calls: int) -> float:
    for _ in range(100):
        fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return calls / (time.perf_counter() - start)


@contextlib.contextmanager
def litert_hidden(hide: bool) -> Iterator[None]:
    """With ``hide``, ``import ai_edge_litert`` fails meanwhile, so TensorFlow's interpreter runs the model."""
    names = ("ai_edge_litert", "ai_edge_litert.interpreter")
    saved = {name: sys.modules.get(name) for name in names}
    if hide:
        sys.modules.update(dict.fromkeys(names, None))
    try:
        yield
    finally:
        if hide:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module


def rlengine_rates(run: str, calls: int) -> dict:
    import numpy as np

    import rlengine

    rng = np.random.default_rng(0)
    single, batch = rng.normal(size=4).astype(np.float32), rng.normal(size=(64, 4)).astype(np.float32)
    out = {}
    for backend in BACKENDS:
        with litert_hidden(backend == "tf.lite"):
            policy = rlengine.load(run, backend="tensorflow" if backend == "tensorflow" else "tflite")
            policy.sampling_backend  # noqa: B018  (the sampling step is traced or converted before timing)
        assert (policy.interpreter or "tensorflow") == backend, (policy.interpreter, backend)
        out[backend] = {"single": rate(lambda: policy.predict(single), calls),
                        "batch": rate(lambda: policy.predict(batch), calls // 4),
                        "sample": rate(lambda: policy.predict(single, deterministic=False), calls)}
    return out


def sb3(mode: str, path: str, calls: int) -> dict:
    out = subprocess.run([SB3_PYTHON, "-c", SB3_SCRIPT, mode, path, str(calls)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1]) if mode != "save" else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a PPO CartPole-v1 run directory (default: train one, about 10 s)")
    parser.add_argument("--calls", type=int, default=5000, help="single-observation calls per measurement")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or train_run(tmp)
        have_sb3 = os.path.exists(SB3_PYTHON)
        sb3_zip = os.path.join(tmp, "sb3_ppo_cartpole.zip")
        if have_sb3:
            sb3("save", sb3_zip, 0)
        cached, built, theirs = [], [], []
        for _ in range(args.trials):  # interleaved, so load from other processes hits all alike
            remove_caches(run)
            built.append(first_call(run))  # builds, and caches once converted (the process waits for it)
            cached.append(first_call(run))
            if have_sb3:
                theirs.append(sb3("first", sb3_zip, 0)["first"])
        rates = [rlengine_rates(run, args.calls) for _ in range(args.trials)]
        sb3_rates = [sb3("rates", sb3_zip, args.calls) for _ in range(args.trials)] if have_sb3 else []
    report(run if args.run else "a fresh 4,096-step PPO run", cached, built, theirs, rates, sb3_rates, have_sb3)


def best(rows: list, *keys: str) -> float:
    values = []
    for row in rows:
        for key in keys:
            row = row[key]
        values.append(row)
    return max(values)


def seconds(trials: list) -> str:
    times = [t if isinstance(t, float) else t[0] for t in trials]
    return f"median {statistics.median(times):.2f} s, best {min(times):.2f} s"


def report(run: str, cached: list, built: list, theirs: list, rates: list, sb3_rates: list, have_sb3: bool) -> None:
    print(f"rlengine.load(...).predict on CartPole-v1 PPO ({run}); best of {len(rates)} trials, calls/s")
    print(f"  import rlengine -> first predict, cached LiteRT model: {seconds(cached)} "
          f"(TensorFlow imported: {any(imported for _, imported in cached)})")
    print(f"  import rlengine -> first predict, first load (build):  {seconds(built)}")
    for backend, name in BACKENDS.items():
        print(f"  predict, {name + ':':22s} one observation {best(rates, backend, 'single'):9.0f}   "
              f"batch of 64 {best(rates, backend, 'batch'):8.0f}   sampling {best(rates, backend, 'sample'):8.0f}")
    if not have_sb3:
        print(f"  SB3: not measured, no venv at {SB3_PYTHON} (make it as ../shared/peers/README.md says)")
        return
    print(f"  SB3 PPO.load -> first predict: {seconds(theirs)}")
    print(f"  SB3 PPO.predict:               one observation {best(sb3_rates, 'single'):9.0f}   "
          f"batch of 64 {best(sb3_rates, 'batch'):8.0f}   sampling {best(sb3_rates, 'sample'):8.0f}")


if __name__ == "__main__":
    main()
