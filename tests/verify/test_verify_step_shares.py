"""Step schedules whose allgather or reduce-scatter blocks are shares of the nodes'
shards (``blocks`` a multiple of ``N``, block ``b`` node ``b mod N``'s): delivered only
when every share arrives; a count that is not a multiple is refused."""

from __future__ import annotations

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.verify.steps import verify_steps


def test_allgather_in_two_shares():
    both = StepSchedule("allgather", "x", ("a", "b"), 4,
                        ((Send("a", "b", (0, 2)), Send("b", "a", (1, 3))),))  # fmt: skip
    assert verify_steps(both).valid
    half = StepSchedule("allgather", "x", ("a", "b"), 4,
                        ((Send("a", "b", (0,)), Send("b", "a", (1, 3))),))  # fmt: skip
    assert verify_steps(half).reason == "node b ends without block 2"
    foreign = StepSchedule("allgather", "x", ("a", "b"), 4, ((Send("a", "b", (1,)),),))
    assert verify_steps(foreign).reason == "step 0: a -> b: block 1 is not held by a"


def test_reduce_scatter_shares_and_bad_counts():
    ok = StepSchedule("reduce_scatter", "x", ("a", "b"), 4,
                      ((Send("a", "b", (1, 3), True), Send("b", "a", (0, 2), True)),))  # fmt: skip
    assert verify_steps(ok).valid
    short = StepSchedule("reduce_scatter", "x", ("a", "b"), 4,
                         ((Send("a", "b", (1,), True), Send("b", "a", (0, 2), True)),))  # fmt: skip
    assert "block 3 summed over 1 of 2 inputs (missing a)" in verify_steps(short).reason
    odd = StepSchedule("allgather", "x", ("a", "b"), 3, ())
    assert "multiple of its 2 nodes, not 3" in verify_steps(odd).reason
