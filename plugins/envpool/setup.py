from setuptools import setup

setup(
    name="rlengine-envpool",
    version="0.1.0",
    description="EnvPool's C++ environments for rlengine: envpool/<task id> (classic control, MuJoCo, Atari, ...)",
    packages=["rlengine_envpool"],
    python_requires=">=3.10",
    install_requires=[
        "rlengine",
        # 1.2.5 has the Python 3.11 wheel and works with NumPy 2 and Gymnasium 1.x (1.2.7 needs Python >= 3.12).
        # Its wheel and asset packages download about 300 MB; the install took 37 s in a fresh venv here.
        "envpool>=1.2.5,<1.3",
        "gymnasium>=1.0,<2",
        "numpy",
        "tensorflow==2.21.*",
        "attrs>=23.1",
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["envpool = rlengine_envpool.plugin"]},
)
