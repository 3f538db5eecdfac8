import pytest

from rlengine.plugin.manager import build_plugins
from rlengine.testing import HookRecorder, testing_plugin
from tests import first_party


@pytest.fixture(autouse=True)
def _state_key_outside_home(tmp_path_factory, monkeypatch):
    """Runs sign their env state with a per-user key (rlengine.collect.state_signing): tests use one of their
    own, not the user's ~/.config/rlengine/state-key."""
    monkeypatch.setenv("RLENGINE_STATE_KEY_FILE", str(tmp_path_factory.getbasetemp() / "state-key"))


@pytest.fixture
def recorder():
    return HookRecorder()


@pytest.fixture
def plugins():
    """Only the core built-ins and the testing plugin: no first-party plugin needed."""
    return build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])


def pytest_collection_modifyitems(config, items):
    """Skip ``first_party`` tests where the first-party plugins are not installed (tox's core env)."""
    missing = sorted({p.package for p in first_party.PACKAGES} - {p.package for p in first_party.installed()})
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs the first-party plugins; missing {', '.join(missing)}")
    for item in items:
        if "first_party" in item.keywords:
            item.add_marker(skip)
