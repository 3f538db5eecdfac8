"""PPO with the Nature CNN on ALE/Breakout-v5 (examples/ppo_breakout.toml): the evaluation curve to
``--env-steps`` (default 1M), training env steps/s, and the time 10M env steps would take here.

    python benchmarks/ppo_breakout.py [--env-steps 1000000] [--seed 0]

Needs the atari extra (pip install -e "plugins/gym[atari]"). Random play scores about 1.5; the issue's
target is an evaluation return of at least 10 at 1M env steps. One evaluation (8 whole games, raw
score) every ~100k env steps; training time excludes evaluation.
"""

import argparse
import time

from runs import train_in_fresh_process


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-interval", type=int, default=98, help="iterations (1,024 env steps each)")
    args = parser.parse_args()
    start = time.perf_counter()
    root, env_steps, train_time, history = train_in_fresh_process(
        "examples/ppo_breakout.toml", args.seed, f"train.num_env_steps={args.env_steps}",
        f"train.eval_interval={args.eval_interval}")
    wall = time.perf_counter() - start
    print(f"PPO nature_cnn ALE/Breakout-v5, seed {args.seed}: {env_steps:,} env steps, "
          f"{train_time:.0f} s training, {wall:.0f} s in all (run dir {root})")
    print(f"{'env steps':>10s} {'train s':>8s} {'eval return':>12s}")
    for steps, seconds, ret in history:
        print(f"{steps:10,d} {seconds:8.0f} {ret:12.1f}")
    rate = env_steps / train_time
    print(f"training env steps/s: {rate:.0f}; 10M env steps would take {1e7 / rate / 3600:.1f} h of training here")


if __name__ == "__main__":
    main()
