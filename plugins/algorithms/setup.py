from setuptools import setup

setup(
    name="rlengine-algorithms",
    version="0.1.0",
    description="First-party rlengine algorithms: actor-critic (A2C) and PPO",
    packages=["rlengine_algorithms"],
    install_requires=["rlengine", "tensorflow-probability==0.25.*", "tf-keras==2.21.*", "attrs"],
    entry_points={"rlengine": ["algorithms = rlengine_algorithms.plugin"]},
)
