"""Each graph environment against its Gymnasium original: 10,000 steps (two copies of 5,000), many
episodes, the same states and actions; observations within 1e-5, rewards, terminations, truncations
and episode lengths equal (the recipe is in tfenvs_twin.py). CartPole and Acrobot take the graph
env's state at every step, the others at every episode start only (tfenvs_twin says why)."""

import pytest
import tensorflow as tf
from rlengine_tfenvs.acrobot import Acrobot
from rlengine_tfenvs.cartpole import CartPole
from rlengine_tfenvs.continuous_mountain_car import MountainCarContinuous
from rlengine_tfenvs.mountain_car import MountainCar
from rlengine_tfenvs.pendulum import Pendulum
from tfenvs_twin import replay_in_gymnasium, rollout

pytestmark = pytest.mark.thorough  # 10,000 steps of each environment: tox -e tfenvs

STEPS = 5_000  # per copy; two copies
TOLERANCE = 1e-5


def _mixed(heuristic, random_action, num_envs=2):
    """Copy 0 follows ``heuristic`` 90 % of the time (long episodes, terminations), copy 1 acts at random."""
    epsilon = tf.constant([0.1] + [1.0] * (num_envs - 1))

    def policy(observation, uniform):
        explore = uniform[:, 0] < epsilon
        return tf.where(explore[:, None] if heuristic(observation).shape.rank == 2 else explore,
                        random_action(uniform[:, 1]), heuristic(observation))

    return policy


def _discrete(n):
    return lambda u: tf.cast(tf.minimum(u * n, n - 1), tf.int32)


def _continuous(low, high):
    return lambda u: (low + (high - low) * u)[:, None]  # also outside the action bounds: both sides clip the force


POLICIES = {
    # lean into the fall: balances for the whole 500 steps unless exploration topples it
    CartPole: _mixed(lambda o: tf.cast(3 * o[:, 2] + o[:, 3] > 0, tf.int32), _discrete(2)),
    # pump energy: torque along the second joint's angular velocity (the tip is up in about 100 steps)
    Acrobot: _mixed(lambda o: tf.where(o[:, 5] > 0, 2, 0), _discrete(3)),
    # push along the velocity: reaches the flag in about 100 steps
    MountainCar: _mixed(lambda o: tf.where(o[:, 1] >= 0, 2, 0), _discrete(3)),
    MountainCarContinuous: _mixed(lambda o: tf.where(o[:, 1:2] >= 0, 1.2, -1.2), _continuous(-1.3, 1.3)),
    Pendulum: _mixed(lambda o: tf.clip_by_value(-3.0 * o[:, 1:2] - o[:, 2:3], -2.5, 2.5), _continuous(-2.5, 2.5)),
}


#: Unstable open-loop dynamics: a last-place rounding difference grows past 1e-5 within an episode.
RESYNC_EVERY_STEP = (CartPole, Acrobot)


@pytest.mark.parametrize("env_class", list(POLICIES), ids=lambda c: c.twin_of)
def test_graph_env_steps_as_gymnasium_does(env_class):
    env = env_class(f"tf/{env_class.twin_of}", num_envs=2, seed=0)
    rows = rollout(env, POLICIES[env_class], STEPS, seed=7)
    resync = "step" if env_class in RESYNC_EVERY_STEP else "episode"
    figures = [replay_in_gymnasium(env, rows, copy, TOLERANCE, resync) for copy in range(2)]
    print(env.env_id, [{k: v for k, v in f.items() if k != "lengths"} for f in figures])
    assert sum(f["episodes"] for f in figures) >= 9  # many episodes: MountainCarContinuous's last 999 steps
    if env_class is not Pendulum:  # the one that never terminates
        assert sum(f["terminations"] for f in figures) > 0
    if env_class is not MountainCar:  # pushing along the velocity reaches the flag within the 200 steps
        assert sum(f["truncations"] for f in figures) > 0


def test_cartpole_compiled_with_xla_steps_as_gymnasium_does():
    env = CartPole("tf/CartPole-v1", num_envs=2, seed=0)
    rows = rollout(env, POLICIES[CartPole], 2_000, seed=8, jit_compile=True)
    for copy in range(2):
        replay_in_gymnasium(env, rows, copy, TOLERANCE, resync="step")
