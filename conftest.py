"""Shared by every test directory: one process builds many runs, sync and async.

TensorFlow's inter-op pool is sized once per process, when the first run
starts it (see rlengine/runtime.py), so it is set here for the largest async
run the tests build; a setting in the environment wins.
"""

import os
import signal

os.environ.setdefault("TF_NUM_INTEROP_THREADS", "8")

# A suite started as a background job of a non-interactive shell (`cmd &` in a script) inherits SIGINT ignored, and
# the engine leaves an ignored SIGINT ignored, as nohup asks. The tests that interrupt runs need what a terminal
# gives: Ctrl-C's default. Set here, before any worker or run process is started, so they inherit it too.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
