from setuptools import find_packages, setup

setup(
    name="rlengine-writers",
    version="0.1.0",
    description="Summary writers for rlengine: TensorBoard, console progress and JSON lines",
    packages=find_packages(include=["rlengine_writers", "rlengine_writers.*"]),
    python_requires=">=3.10",
    install_requires=[
        "rlengine>=0.1",
        "tensorflow==2.21.*",
        # tf.summary is implemented by the tensorboard package.
        "tensorboard>=2.21",
        "tqdm>=4.60",
        "attrs>=23.1",
        "numpy",
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["writers = rlengine_writers.plugin"]},
)
