"""Keep a Python thread state on each TensorFlow thread that calls an environment.

A ``tf.numpy_function`` runs on one of TensorFlow's own threads, which Python
does not know. To run the callback, TensorFlow takes the GIL with
``PyGILState_Ensure`` and gives it back with ``PyGILState_Release``; on such a
thread the first makes a new thread state and the second deletes it again, so
every call builds and frees one (CPython 3.11 maps and unmaps a frame stack for
each). That was two thirds of what a ``numpy_function`` call cost: with the state
kept a call takes a third of the time (``benchmarks/numpy_function_call.py``).

Taking one more reference to the thread state from inside the first callback on a
thread keeps that state for the thread's life: later callbacks find it and only
take the GIL. TensorFlow's pools have a fixed number of threads, so this keeps at
most one thread state per pool thread. The callers::

    def _py_step(self, *action):        # runs inside tf.numpy_function
        keep_thread_state()             # first call on this thread: keep its state
        return self.env.step(...)
"""

from __future__ import annotations

import ctypes
import threading

_thread = threading.local()  # per thread state: set once the state is kept


def keep_thread_state() -> None:
    """Make the calling thread's Python thread state outlive the current callback.

    Call it from inside a ``tf.numpy_function`` callback; cheap after the first
    call on a thread. On a Python thread (one ``threading`` started, or the main
    thread) it changes nothing that matters: that state lives as long as the thread.
    """
    if getattr(_thread, "kept", False):
        return
    # Called with the GIL held: one more PyGILState reference, never released, so the
    # PyGILState_Release ending this callback leaves the thread state in place.
    ctypes.pythonapi.PyGILState_Ensure()
    _thread.kept = True
