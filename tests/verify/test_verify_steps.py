"""The step-schedule checker executes what it is given and names what fails."""

from __future__ import annotations

from dataclasses import replace

from optcoll.core.step_schedule import Send, StepSchedule
from optcoll.schedules.baselines.logstep import (
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_halving_reduce_scatter,
)
from optcoll.verify.steps import verify_steps


def test_a_step_dropped_is_caught():
    good = recursive_doubling_allgather("abcdef")
    assert verify_steps(good).valid
    broken = replace(good, steps=good.steps[:-1])
    verdict = verify_steps(broken)
    assert not verdict.valid and "ends without block" in verdict.reason


def test_a_reduction_counted_twice_is_caught():
    good = rabenseifner_allreduce("abcd")
    twice = replace(good, steps=(good.steps[0], *good.steps))
    verdict = verify_steps(twice)
    assert not verdict.valid and "twice" in verdict.reason


def test_a_block_not_held_is_caught():
    bad = StepSchedule("allgather", "x", ("a", "b"), 2, ((Send("a", "b", (1,)),),))
    assert verify_steps(bad).reason == "step 0: a -> b: block 1 is not held by a"


def test_a_reduce_scatter_that_ends_on_the_wrong_node_is_caught():
    good = recursive_halving_reduce_scatter("abcd")
    swapped = replace(good, compute_nodes=("b", "a", "c", "d"))
    assert not verify_steps(swapped).valid


def test_outside_nodes_and_self_sends():
    outside = StepSchedule("allgather", "x", ("a", "b"), 2, ((Send("a", "z", (0,)),),))
    assert "not a compute node" in verify_steps(outside).reason
    itself = StepSchedule("allgather", "x", ("a", "b"), 2, ((Send("a", "a", (0,)),),))
    assert "sends to itself" in verify_steps(itself).reason
