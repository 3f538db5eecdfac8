"""The built-in pipelines, registered like any plugin's."""

from __future__ import annotations

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.2"


@hookimpl
def rlengine_register_pipelines(register):
    register("sync", "rlengine.pipelines.sync.pipeline:SyncPipeline")
    register("async", "rlengine.pipelines.threaded.pipeline:AsyncPipeline")
