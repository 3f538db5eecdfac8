"""What a run leaves in its process once it ended: none of its graphs stays registered in TensorFlow,
so a process that trains run after run (``rlengine tune``, these tests) does not grow with each one.
``benchmarks/memory_runs.py`` measures the memory itself."""

import gc

from tensorflow.python.eager import context

from rlengine import hookimpl
from rlengine.run.engine import Engine
from rlengine.run.process.custom_gradients import custom_gradient_names
from rlengine.testing import testing_plugin, tiny_config


class CustomGradientsAtTheEnd:
    """Notes the custom gradients registered in the process when the run's end hook fires."""

    names: set = set()

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.names = custom_gradient_names()


def _train(root, *plugins) -> None:
    Engine(tiny_config(str(root)), extra_plugins=[("testing", testing_plugin()), *plugins]).train()


def _registered_functions() -> int:
    """The functions TensorFlow's eager context holds once the garbage is collected."""
    gc.collect()
    return len(context.context().list_function_names())


def test_the_custom_gradients_of_a_run_are_unregistered_when_it_ends(tmp_path):
    before = custom_gradient_names()
    at_the_end = CustomGradientsAtTheEnd()
    _train(tmp_path, ("at-the-end", at_the_end))
    # the toy's Keras optimizer registered some while the run trained: they held its update graph
    assert at_the_end.names - before
    assert custom_gradient_names() == before


def test_a_finished_run_leaves_no_function_registered(tmp_path):
    _train(tmp_path / "first")  # what a process traces once, for any run, is traced by now
    after_one = _registered_functions()
    _train(tmp_path / "second")
    assert _registered_functions() <= after_one
