"""The learning targets, per seed: env steps and training time to the threshold.

Runs each example config (each seed in a fresh process) and prints the first
evaluation reaching the target, with training wall time (evaluation
excluded, building and tracing included).

    python benchmarks/learning_targets.py [--seeds 3] [--only ppo_pendulum]
"""

import argparse

from runs import first_reaching, train_in_fresh_process

TARGETS = {  # example -> threshold the issue asks for
    "ppo_cartpole": 475.0,
    "a2c_cartpole": 475.0,
    "ppo_pendulum": -250.0,
    "ppo_lstm_cartpole_novelocity": 475.0,
    "sac_pendulum": -200.0,
    "td3_pendulum": -200.0,
    "dqn_cartpole": 475.0,
    "reinforce_cartpole": 475.0,  # the example plugin in plugins/reinforce
    "ppo_cartpole_ray": 475.0,  # through the ray pipeline (plugins/ray): 2 runners on a local Ray
    "sac_pendulum_ray": -200.0,
}

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", choices=sorted(TARGETS))
    args = parser.parse_args()
    for example, target in TARGETS.items():
        if args.only and example != args.only:
            continue
        for seed in range(args.seeds):
            _, env_steps, train_time, history = train_in_fresh_process(f"examples/{example}.toml", seed)
            hit = first_reaching(history, target)
            if hit:
                print(f"{example:30s} seed {seed}: {hit[2]:7.1f} >= {target:g} at {hit[0]:7d} env steps, "
                      f"{hit[1]:6.1f} s training")
            else:
                print(f"{example:30s} seed {seed}: not reached in {env_steps} env steps "
                      f"(best {max(r for _, _, r in history):.1f}), {train_time:.1f} s")


if __name__ == "__main__":
    main()
