from setuptools import setup

setup(
    name="rlengine-tfenvs",
    version="0.1.0",
    description="Classic-control environments written in TensorFlow for rlengine: tf/CartPole-v1 and others",
    packages=["rlengine_tfenvs"],
    python_requires=">=3.10",
    install_requires=[
        "rlengine",
        "tensorflow==2.21.*",
        "numpy",
    ],
    # gymnasium: the Gymnasium adapter (GraphEnvAsGymnasium) and the tests against Gymnasium's own envs
    extras_require={"test": ["gymnasium>=1.0,<2", "pytest>=8"]},
    entry_points={"rlengine": ["tfenvs = rlengine_tfenvs.plugin"]},
)
