from setuptools import setup

setup(
    name="rlengine-algorithms",
    version="0.1.0",
    description="First-party rlengine algorithms (A2C, PPO, SAC, TD3, DQN), encoders and tuned presets",
    packages=["rlengine_algorithms", "rlengine_algorithms.presets"],
    package_data={"rlengine_algorithms.presets": ["*.toml"]},
    install_requires=["rlengine", "tensorflow-probability==0.25.*", "tf-keras==2.21.*", "attrs"],
    entry_points={"rlengine": ["algorithms = rlengine_algorithms.plugin"]},
)
