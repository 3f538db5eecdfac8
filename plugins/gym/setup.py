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
        # LunarLander, BipedalWalker, CarRacing. Gymnasium's own box2d extra, minus its pygame-ce:
        # rlengine-tools installs pygame, and the two write the same package. Every Box2D env
        # imports pygame, since gymnasium.envs.box2d imports CarRacing, which draws its observations.
        # box2d 2.3.10 has wheels up to Python 3.13; box2d-py builds from source with swig.
        "box2d": [
            'box2d==2.3.10; python_version < "3.14"',
            'box2d-py==2.3.8; python_version >= "3.14"',
            'swig==4.*; python_version >= "3.14"',
            "pygame>=2.1",
        ],
        # The -v5 ids; 2.3.3 is the oldest MuJoCo they document. Below 3.16, the newest MuJoCo
        # when Gymnasium 1.4 came out: 3.16 deprecated the settotalmass attribute that
        # half_cheetah.xml sets (a warning for every copy made, removal announced); 4.0 too.
        # Gymnasium's renderer imports imageio and packaging.
        "mujoco": ["mujoco>=2.3.3,<3.16", "imageio>=2.14.1", "packaging>=23.0"],
        # Environments of the old gym package (0.21 and 0.26 API), through shimmy's compatibility envs.
        # shimmy without its gym-v21/gym-v26 extras, which pin NumPy below 2; gym 0.26.2 runs on NumPy 2
        # with its environment checker off (the plugin turns it off). gym builds from its sdist (no wheel).
        "legacy": ["gym==0.26.2", "shimmy>=1.0,<3"],
    },
    entry_points={"rlengine": ["gym = rlengine_gym.plugin"]},
)
