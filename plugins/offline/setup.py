from setuptools import setup

setup(
    name="rlengine-offline",
    version="0.1.0",
    description="Learning from data for rlengine: Minari datasets (rlengine collect), an offline pipeline, "
                "behaviour cloning, TD3+BC, IQL",
    packages=["rlengine_offline"],
    python_requires=">=3.10",
    install_requires=[
        "rlengine",
        "rlengine-algorithms",  # bc builds on its networks, encoders and optimizer
        # hdf5 (h5py) reads and writes datasets: episodes are written whole through
        # minari.create_dataset_from_buffers, and only Minari's step-by-step DataCollector needs JAX ("create");
        # hf (huggingface_hub) is what Minari downloads its remote datasets with
        "minari[hdf5,hf]>=0.5.4,<0.6",
        "gymnasium>=1.0,<2",
        "numpy",
        "tensorflow==2.21.*",
        "attrs>=23.1",
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["offline = rlengine_offline.plugin"]},
)
