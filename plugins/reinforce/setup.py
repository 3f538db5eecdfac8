from setuptools import setup

setup(
    name="rlengine-reinforce",
    version="0.1.0",
    description="An example rlengine algorithm plugin: REINFORCE with a learned value baseline",
    packages=["rlengine_reinforce"],
    python_requires=">=3.10",
    install_requires=["rlengine", "tensorflow-probability==0.25.*", "tf-keras==2.21.*", "attrs"],
    entry_points={"rlengine": ["reinforce = rlengine_reinforce.plugin"]},
)
