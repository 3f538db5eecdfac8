from setuptools import find_packages, setup

setup(
    name="rlengine-transformers",
    version="0.1.0",
    description="Observation transformers for rlengine: normalize, image_scale, frame_stack",
    packages=find_packages(include=["rlengine_transformers", "rlengine_transformers.*"]),
    python_requires=">=3.10",
    install_requires=[
        "rlengine>=0.1",
        "tensorflow==2.21.*",
        "attrs>=23.1",
    ],
    extras_require={"test": ["pytest>=8", "numpy"]},
    entry_points={"rlengine": ["transformers = rlengine_transformers.plugin"]},
)
