import os
import sys

# The plugin is tested from its checkout, uninstalled: its directory goes first on sys.path, and
# this one too, for the helper module tfenvs_twin (the exactness recipe).
_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (_HERE, os.path.dirname(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)
