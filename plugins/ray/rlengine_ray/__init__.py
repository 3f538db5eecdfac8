"""rlengine-ray: the ``ray`` pipeline (``train.pipeline = "ray"``, settings in ``[ray]``)."""

from rlengine_ray.config import RayConfig

__all__ = ["RayConfig"]
