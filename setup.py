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
        # runs rlengine.load's converted policy (21.8 MB wheel, no TensorFlow needed to run it); none is
        # built for Intel macOS, where TensorFlow's own tf.lite interpreter runs it instead
        "ai-edge-litert>=2.3,<3; platform_system != 'Darwin' or platform_machine == 'arm64'",
    ],
    extras_require={
        "test": ["pytest>=8", "gymnasium>=1.0,<2"],
        # eval, play, export and plot are the rlengine-tools plugin (plugins/tools), with its dependencies.
    },
    entry_points={
        "console_scripts": ["rlengine=rlengine.cli:main"],
        # The core's own plugins (pipelines, commands, distributions) are registered by module name,
        # through the same hooks, before any entry point of the `rlengine` group (rlengine/plugin/core_plugins.py).
    },
    package_data={"rlengine.config": ["default.toml"]},
)
