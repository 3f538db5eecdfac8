from setuptools import find_packages, setup

setup(
    name="rlengine-tools",
    version="0.1.0",
    description="Commands on rlengine run directories: eval, play (recorded as GIF or MP4), export, plot",
    packages=find_packages(include=["rlengine_tools", "rlengine_tools.*"]),
    python_requires=">=3.10",
    install_requires=[
        "rlengine>=0.1",
        "tensorflow==2.21.*",
        "attrs>=23.1",
        "numpy",
        # Imported only by the command that needs them: plot draws with matplotlib; play --record
        # writes GIFs through Pillow and MP4s through imageio-ffmpeg; pygame draws Gymnasium's
        # classic-control frames.
        "matplotlib>=3.7",
        "imageio>=2.31",
        "imageio-ffmpeg>=0.4.9",
        "pillow>=10",
        "pygame>=2.1",
    ],
    extras_require={"test": ["pytest>=8"]},
    entry_points={"rlengine": ["tools = rlengine_tools.plugin"]},
)
