"""First-party rlengine algorithms."""
