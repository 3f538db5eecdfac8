"""Shared by the benchmarks: train one configuration in a fresh process, run another checkout's code.

A fresh process per run measures what `rlengine train` pays (imports aside):
cold tracing, no caches warmed by an earlier run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

_CODE = ("import json, sys; import rlengine; r = rlengine.Engine(None if sys.argv[1] == '-' else sys.argv[1], "
         "sys.argv[2:]).train(); print(json.dumps([r.env_steps, r.train_time, r.eval_history]))")


def train_in_fresh_process(config: str, seed: int, *overrides: str) -> tuple:
    """Train ``config`` (a TOML path, or ``-`` for the embedded default) with ``seed``.

    Returns ``(root_dir, env_steps, train_time, eval_history)``; the run writes
    only ``metrics.jsonl`` into a fresh temporary root dir.
    """
    root = tempfile.mkdtemp(prefix=f"rlengine-bench-{seed}-")
    args = [config, f"train.seed={seed}", f'train.root_dir="{root}"', 'train.writers=["jsonl"]', *overrides]
    out = subprocess.run([sys.executable, "-c", _CODE, *args], check=True, capture_output=True, text=True).stdout
    env_steps, train_time, history = json.loads(out.strip().splitlines()[-1])
    return root, env_steps, train_time, history


def first_reaching(history: list, target: float):
    """``(env_steps, train_time, return)`` of the first evaluation at or above ``target``, or None."""
    return next(((s, t, r) for s, t, r in history if r >= target), None)


def sb3_in_fresh_process(peers: str, python: str, config: str, seed: int, total: int, every: int) -> tuple:
    """One Stable-Baselines3 run of the shared peer harness (``<peers>/sb3_bench.py``, RL-Zoo settings) in its own
    venv's ``python``: ``(history, env steps/s)``, history ``[(env_steps, train_s, return)]``, evaluation excluded."""
    out = tempfile.mktemp(suffix=".json", prefix="sb3-")
    subprocess.run([python, os.path.join(peers, "sb3_bench.py"), "--config", config, "--seed", str(seed),
                    "--total", str(total), "--eval-every", str(every), "--out", out], check=True, capture_output=True)
    with open(out) as f:
        result = json.load(f)
    history = [(e["timesteps"], e["train_s"], e["mean_return"]) for e in result["evals"]]
    return history, result["env_steps"] / result["train_s"]


def for_good(history: list, target: float):
    """The first evaluation after which every one stays at or above ``target``, or None."""
    for i, entry in enumerate(history):
        if all(r >= target for *_, r in history[i:]):
            return entry
    return None


def run_in_checkout(core: str | None, args: list, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(args)`` (checked, output captured) with the core and plugin packages of the checkout
    ``core`` before the installed ones, or with what is installed when None; TensorFlow's C++ messages quiet.

    It runs in ``core``: ``python -c`` puts the working directory first on the path, so run from another
    checkout's root it would import that checkout's core.
    """
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    if core:
        plugins = sorted(os.path.join(core, "plugins", name) for name in os.listdir(os.path.join(core, "plugins")))
        env["PYTHONPATH"] = os.pathsep.join([core, *plugins, env.get("PYTHONPATH", "")])
    return subprocess.run(args, check=True, capture_output=True, env=env, cwd=core, **kwargs)


def interleaved(variants: dict, repeats: int, run: Callable[[Any], dict], figure: Callable[[dict], str]) -> dict:
    """``run(value)`` for each variant ``repeats`` times, the variants taking turns (so every ratio comes from
    one stretch of the machine), each result's ``figure`` printed as it comes; the results by variant name."""
    results: dict = {name: [] for name in variants}
    for i in range(repeats):
        for name, value in variants.items():
            results[name].append(run(value))
            print(f"  {name} #{i + 1}: {figure(results[name][-1])}", flush=True)
    return results
