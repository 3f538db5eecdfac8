"""REINFORCE with a learned value baseline: an rlengine algorithm plugin built on the public API only."""
