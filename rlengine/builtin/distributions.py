"""The built-in distributions' converters, registered like any plugin's (lazily: they are defined in
:mod:`rlengine.builtin.tfp_distributions`, which imports TensorFlow Probability, which listing plugins
must not)."""

from __future__ import annotations

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.2"

NAMES = ("categorical", "normal", "independent_normal", "mvn_diag", "squashed_normal", "deterministic", "bernoulli")


@hookimpl
def rlengine_register_distributions(register):
    for name in NAMES:  # each resolves to its (class, to_params, from_params)
        register(name, f"rlengine.builtin.tfp_distributions:CONVERTERS.{name}")
