from setuptools import find_packages, setup

setup(
    name="rlengine",
    version="0.1.0",
    description="A plugin-based reinforcement-learning engine on TensorFlow 2",
    packages=find_packages(include=["rlengine", "rlengine.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow==2.21.*",
        "tensorflow-probability==0.25.*",
        "tf-keras==2.21.*",
        "pluggy>=1.5,<2",
        "attrs>=23.1",
        "tomli>=2.0; python_version<'3.11'",
        "tomli-w>=1.0",
    ],
    extras_require={
        "test": ["pytest>=8", "gymnasium>=1.0,<2"],
        # rlengine play --record (GIF via Pillow, MP4 via imageio-ffmpeg; pygame draws
        # Gymnasium's classic-control frames) and rlengine plot; imported only by those commands.
        "tools": ["matplotlib>=3.7", "imageio>=2.31", "imageio-ffmpeg>=0.4.9", "pillow>=10", "pygame>=2.1"],
    },
    entry_points={
        "console_scripts": ["rlengine=rlengine.cli:main"],
        # The core's own built-ins load through the same group as any plugin.
        "rlengine": ["builtin-distributions = rlengine.builtin.distributions"],
    },
)
