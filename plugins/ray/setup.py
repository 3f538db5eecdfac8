from setuptools import find_packages, setup

setup(
    name="rlengine-ray",
    version="0.1.0",
    description="Ray for rlengine: the ray pipeline (env runners as Ray actors, restarted when they fail), "
                "seeds as Ray actors (train --seeds --ray), tune's trials on Ray Tune (tune --ray)",
    packages=find_packages(include=["rlengine_ray", "rlengine_ray.*"]),
    python_requires=">=3.10",
    install_requires=[
        "rlengine>=0.1",
        # local_mode is gone from 2.54; tested with 2.60
        "ray>=2.54,<3",
        "attrs>=23.1",
        "numpy>=1.24",
    ],
    # rlengine tune --ray: Ray Tune (it brings pandas and pyarrow, which the pipeline and --seeds do not need)
    # and the tune command it runs the trials of
    extras_require={"test": ["pytest>=8"], "tune": ["ray[tune]>=2.54,<3", "rlengine-optuna>=0.1"]},
    entry_points={"rlengine": ["ray = rlengine_ray.plugin"]},
)
