"""The local process pool of :mod:`optcoll.studies.engines`: every task's outcome,
errors kept per task, and nothing lost to pickling."""

import threading

from optcoll.studies.engines import TaskError, run_tasks


def _lock_or_double(x: int):
    return threading.Lock() if x == 1 else 2 * x


def test_the_pool_returns_every_outcome_by_index():
    outcomes = dict(run_tasks(_lock_or_double, [0, 2, 3, 5, 7], workers=2))
    assert outcomes == {0: 0, 1: 4, 2: 6, 3: 10, 4: 14}


def test_a_result_that_cannot_be_pickled_is_that_task_s_error_only():
    outcomes = dict(run_tasks(_lock_or_double, [0, 1, 2], workers=2))
    assert outcomes[0] == 0 and outcomes[2] == 4
    assert isinstance(outcomes[1], TaskError) and "pickle" in outcomes[1].message


def test_a_task_that_cannot_be_pickled_is_that_task_s_error_only():
    outcomes = dict(run_tasks(abs, [-1, threading.Lock(), -3], workers=2))
    assert outcomes[0] == 1 and outcomes[2] == 3
    assert outcomes[1] == TaskError("TypeError: cannot pickle '_thread.lock' object")


def test_a_task_that_raises_is_that_task_s_error_only():
    outcomes = dict(run_tasks(int, ["7", "x", "9"], workers=2))
    assert outcomes[0] == 7 and outcomes[2] == 9
    assert outcomes[1] == TaskError("ValueError: invalid literal for int() with base 10: 'x'")
