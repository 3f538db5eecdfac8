import os
import sys

# The plugin may be tested from its checkout, uninstalled: its directory goes first on sys.path,
# and this one too (tiny_games is imported by name).
_HERE = os.path.dirname(os.path.abspath(__file__))
for path in (os.path.dirname(_HERE), _HERE):
    if path not in sys.path:
        sys.path.insert(0, path)
