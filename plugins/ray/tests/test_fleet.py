"""The fleet's bookkeeping of a restart, without a Ray instance (Ray's calls replaced)."""

import types

from rlengine_ray import fleet as fleet_module


class Reference:
    def __init__(self, description):
        self.description = description


class FakeActor:
    """``describe.remote()`` gives a reference to the next description; the fake ``ray.get`` reads it."""

    def __init__(self, *incarnations):
        self.answers = [Reference({"incarnation": i}) for i in incarnations]
        self.describe = types.SimpleNamespace(remote=lambda: self.answers.pop(0))


def test_an_answer_of_the_failed_life_does_not_make_the_runner_ready(monkeypatch):
    # A killed actor may still answer describe before the kill lands; sample requests sent then would fail
    # with "the actor is restarting", and count as a second failure of the same fault (seen in CI).
    killed = []
    monkeypatch.setattr(fleet_module, "ray", types.SimpleNamespace(get=lambda ref: ref.description,
                                                                   kill=lambda actor, **kw: killed.append(actor)))
    monkeypatch.setattr(fleet_module, "WAIT_SLICE", 0.0)
    fleet = fleet_module.RunnerFleet(lambda r: None, 1, 2, 3, 0.0, 60.0, lambda d: None, lambda r: None)
    actor = FakeActor("old", "new")
    fleet.actors, fleet.ready, fleet.incarnations = [actor], [True], ["old"]
    fleet._failed(0, RuntimeError("chaos env raised"), kill=True)
    assert killed == [actor] and fleet.restarts == [1] and not fleet.ready[0]
    fleet._started(next(iter(fleet.starting)))  # the old life answers: not ready, asked again
    assert not fleet.ready[0] and list(fleet.starting.values()) == [0]
    fleet._started(next(iter(fleet.starting)))  # the new life answers
    assert fleet.ready == [True] and fleet.incarnations == ["new"] and fleet.restarts == [1]
