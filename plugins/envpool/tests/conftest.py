import os
import sys

# The plugin may be tested from its checkout, uninstalled: its directory goes first on sys.path.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PACKAGE not in sys.path:
    sys.path.insert(0, _PACKAGE)
