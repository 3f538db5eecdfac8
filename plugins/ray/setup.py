from setuptools import find_packages, setup

setup(
    name="rlengine-ray",
    version="0.1.0",
    description="The ray pipeline for rlengine: env runners as Ray actors, the learner in the driver, "
                "runners restarted when they fail",
    packages=find_packages(include=["rlengine_ray", "rlengine_ray.*"]),
    python_requires=">=3.10",
    install_requires=[
        "rlengine>=0.1",
        # local_mode is gone from 2.54; tested with 2.60
        "ray>=2.54,<3",
        "attrs>=23.1",
        "numpy>=1.24",
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["ray = rlengine_ray.plugin"]},
)
