"""The module the `rlengine` entry point names: rlengine calls the hooks defined here.

Add more hooks from rlengine's hook specs (environments, transformers,
writers, lifecycle hooks such as ``rlengine_iteration_end``) as plain
functions decorated with ``@hookimpl``.

Keep this module cheap to import: ``rlengine plugins`` and ``rlengine --help``
load every plugin's entry point. Register classes as ``"module:Class"``
strings; rlengine imports (and checks) them on first use only, so nothing
here imports TensorFlow.
"""

from rlengine import hookimpl

#: The rlengine plugin API this plugin is written against (``rlengine.API_VERSION``
#: when you wrote it). rlengine refuses, in one line naming this plugin, to load
#: it into a core whose major version differs or whose minor version is older.
RLENGINE_API_VERSION = "1.0"


@hookimpl
def rlengine_register_algorithms(register):
    # The name is what `--algorithm` selects and the TOML section holding the
    # algorithm's options; the class is imported when a run first needs it.
    register("{{ cookiecutter.algorithm_name }}", "{{ cookiecutter.package_name }}.algorithm:PolicyGradient")
