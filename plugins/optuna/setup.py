from setuptools import find_packages, setup

setup(
    name="rlengine-optuna",
    version="0.1.0",
    description="rlengine tune: hyperparameter search with Optuna (TPE sampling, median pruning, resumable studies)",
    packages=find_packages(include=["rlengine_optuna", "rlengine_optuna.*"]),
    python_requires=">=3.10",
    install_requires=[
        "rlengine>=0.1",
        # the journal storage lives in optuna.storages.journal since 4.0; tested with 5.0
        "optuna>=4.0",
        "attrs>=23.1",
        "tomli-w>=1.0",
        'tomli>=2.0; python_version < "3.11"',
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["optuna = rlengine_optuna.plugin"]},
)
