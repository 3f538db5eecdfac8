"""The entry point: registers the ``ray`` pipeline through the same hook as the built-in ones, and
``--ray`` on ``rlengine train --seeds`` and ``rlengine tune`` (commands extending them)."""

from __future__ import annotations

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.8"


@hookimpl
def rlengine_register_pipelines(register):
    register("ray", "rlengine_ray.pipeline:RayPipeline")


@hookimpl
def rlengine_register_commands(register):
    register("train-on-ray", "rlengine_ray.commands:RaySeeds")
    register("tune-on-ray", "rlengine_ray.commands:RayTune")
