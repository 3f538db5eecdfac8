"""Hook calls that name the plugin whose implementation raised.

``Plugins.hook`` hands out these wrappers instead of pluggy's callers, so
every call site gets the same one-line ``PluginError`` (plugin, its
distribution, the hook, the exception) without a try block of its own.
"""

from __future__ import annotations

from typing import Any, Optional

import pluggy

from rlengine.errors import PluginError, RLEngineError, one_line


class GuardedHooks:
    """Attribute access like ``pluggy``'s ``manager.hook``, with guarded callers."""

    def __init__(self, plugins: Any):
        self._plugins = plugins

    def __getattr__(self, hook_name: str) -> "GuardedCaller":
        return GuardedCaller(self._plugins, getattr(self._plugins.manager.hook, hook_name))


class GuardedCaller:
    """Calls one hook; an exception raised by an implementation names its plugin and the hook.

    Errors meant for users (``RLEngineError``) and interrupts pass unchanged;
    so does anything not raised inside an implementation (a core bug).
    """

    def __init__(self, plugins: Any, caller: Any):
        self._plugins, self._caller = plugins, caller

    def __getattr__(self, name: str) -> Any:  # get_hookimpls(), name, ...
        return getattr(self._caller, name)

    def __call__(self, **kwargs: Any) -> Any:
        try:
            return self._caller(**kwargs)
        except RLEngineError:
            raise
        except Exception as exc:
            name = _raising_plugin(self._plugins.manager, self._caller.get_hookimpls(), exc)
            if name is None:
                raise
            raise PluginError(_hook_failure_message(self._plugins, name, self._caller.name, exc)) from exc


def _raising_plugin(pm: pluggy.PluginManager, impls: list, exc: BaseException) -> Optional[str]:
    """The name of the plugin whose implementation is on ``exc``'s traceback (outermost first)."""
    by_code = {}
    for impl in impls:
        code = getattr(impl.function, "__code__", None)
        if code is not None:
            by_code[code] = pm.get_name(impl.plugin)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in by_code:
            return by_code[tb.tb_frame.f_code]
        tb = tb.tb_next
    return None


def _hook_failure_message(plugins: Any, name: str, hook_name: str, exc: BaseException) -> str:
    who, switch_off = plugins.culprit(name)  # a plugin, or a callback instance of one
    return (f"{who} raised in hook {hook_name}: {type(exc).__name__}: {one_line(exc)}".rstrip(": ")
            + f" (fix or update the plugin, or {switch_off}; --debug shows the traceback)")


def wrong_result_message(plugins: Any, name: str, hook_name: str, argument: str, expected: type, result: Any) -> str:
    """A hook returned something its callers cannot use (``rlengine_configure`` returning a dict, say)."""
    info = next((i for i in plugins.infos if i.name == name), None)
    origin = f" ({info.distribution} {info.version})".replace(" )", ")") if info and info.distribution else ""
    shown = repr(result)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return (f"plugin {name!r}{origin}: hook {hook_name} returned {type(result).__name__} {shown}, not a "
            f"{expected.__name__}; return the {argument} it was given (changed, e.g. with attrs.evolve) or None "
            f"to keep it (or disable it with --disable-plugin {name})")
