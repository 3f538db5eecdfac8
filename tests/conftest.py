import pytest

from rlengine.plugins import build_plugins
from rlengine.testing import HookRecorder, testing_plugin


@pytest.fixture
def recorder():
    return HookRecorder()


@pytest.fixture
def plugins():
    """Only the core built-ins and the testing plugin: no first-party plugin needed."""
    from rlengine.builtin import distributions

    return build_plugins(load_entry_points=False,
                         extra_plugins=[("builtin-distributions", distributions), ("testing", testing_plugin())])
