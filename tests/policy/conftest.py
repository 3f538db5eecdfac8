"""The runs the tests of rlengine.load share (trained once per module, in its own directory)."""

import pytest

from tests.policy.runs import train


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    return train(tmp_path_factory, "toy", env="counted")


@pytest.fixture(scope="module")
def dict_run(tmp_path_factory):
    return train(tmp_path_factory, "dict", env="dict-counting", algorithm="memory")


@pytest.fixture(scope="module")
def shift_run(tmp_path_factory):
    return train(tmp_path_factory, "shift", env="counted", algorithm="memory", transformers=["shift"])
