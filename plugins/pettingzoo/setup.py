from setuptools import setup

setup(
    name="rlengine-pettingzoo",
    version="0.1.0",
    description="PettingZoo's multi-agent environments for rlengine: mpe2/<env> and pettingzoo/<family>.<env>, "
                "every agent of every copy one batch row",
    packages=["rlengine_pettingzoo"],
    python_requires=">=3.10",
    install_requires=[
        "rlengine",
        # 1.25 is the first PettingZoo on Gymnasium 1.x; its MPE environments moved to mpe2 (1.1).
        "pettingzoo>=1.25,<2",
        "mpe2>=1.1",
        "gymnasium>=1.0,<2",
        "numpy",
        "tensorflow==2.21.*",
        "attrs>=23.1",
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["pettingzoo = rlengine_pettingzoo.plugin"]},
)
