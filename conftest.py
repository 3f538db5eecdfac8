"""Shared by every test directory: one process builds many runs, sync and async.

TensorFlow's inter-op pool is sized once per process, when the first run
starts it (see rlengine/runtime.py), so it is set here for the largest async
run the tests build; a setting in the environment wins.
"""

import os

os.environ.setdefault("TF_NUM_INTEROP_THREADS", "8")
