from setuptools import find_packages, setup

setup(
    name="rlengine-writers",
    version="0.1.0",
    description="Summary writers for rlengine: TensorBoard, console progress, JSON lines, MLflow and W&B",
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
    extras_require={
        "test": ["pytest>=8"],
        # mlflow-skinny is MLflow's client without its server, UI and ML libraries (see docs/trackers.md);
        # SQLAlchemy and Alembic are what its SQLite store, MLflow's default store, needs on top.
        "mlflow": ["mlflow-skinny>=3.1", "sqlalchemy>=2.0", "alembic>=1.12"],
        # reinit="create_new" (a run beside a notebook's own runs) needs wandb 0.20
        "wandb": ["wandb>=0.20"],
    },
    entry_points={"rlengine": ["writers = rlengine_writers.plugin"]},
)
