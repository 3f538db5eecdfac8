"""Algorithms built outside a run need the run's encoders in scope (the core provides them in a run).

Every test here builds its algorithms with this plugin's encoders, each
with its default config unless the test asks for others through
``encoder_configs``.
"""

import importlib

import pytest
from rlengine_algorithms.plugin import ENCODERS

from rlengine.api.network import Encoders, encoders_in_scope


def encoder_class(name: str) -> type:
    module, cls = ENCODERS[name].split(":")
    return getattr(importlib.import_module(module), cls)


@pytest.fixture
def encoder_configs() -> dict:
    """Registered name -> config of that encoder; a test fills it to build with options."""
    return {}


@pytest.fixture(autouse=True)
def first_party_encoders(encoder_configs):
    def lookup(name: str) -> tuple:
        cls = encoder_class(name)
        return cls, encoder_configs.get(name) or cls.config_class()

    with encoders_in_scope(Encoders(lookup)) as encoders:
        yield encoders
