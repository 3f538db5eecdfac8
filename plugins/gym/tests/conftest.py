import os
import sys

# tiny_env_module is imported by name (also by worker processes, through the
# "tiny_env_module:Name-v0" id form), so this directory must be on sys.path.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
