from setuptools import setup

setup(
    name="rlengine-gym",
    version="0.1.0",
    description="Gymnasium environments for rlengine",
    packages=["rlengine_gym"],
    python_requires=">=3.10",
    install_requires=[
        "rlengine",
        "gymnasium>=1.0,<2",
        "numpy",
        # Also imported directly (both come with rlengine too).
        "tensorflow==2.21.*",
        "attrs>=23.1",
    ],
    extras_require={
        "test": ["pytest>=8"],
        # ale-py ships the emulator and the game ROMs. Gymnasium's AtariPreprocessing always
        # imports cv2 (it resizes with cv2.resize); the headless build has no GUI libraries
        # (Qt, libGL) that servers and containers lack.
        "atari": ["ale-py>=0.9,<0.13", "opencv-python-headless>=4.5"],
    },
    entry_points={"rlengine": ["gym = rlengine_gym.plugin"]},
)
