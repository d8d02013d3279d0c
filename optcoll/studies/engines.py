"""Engines that evaluate independent work units: in this process, a local process pool, or Dask.

A sweep (:mod:`optcoll.studies.sweep`) or a failure study (:mod:`optcoll.studies.resilience`) builds a
list of independent *tasks* and a picklable function of one task; :func:`run_tasks`
hands them to an engine and yields ``(index, outcome)`` pairs as the tasks finish (in
any order). The tasks know nothing of the engine.

Engines
-------
``workers=1`` (and no Dask)
    In this process, in order: the serial reference path.
local process pool (default)
    :class:`multiprocessing.pool.Pool` with ``workers`` processes (all cores by
    default); an interrupt stops every worker at once.
Dask (``dask=ADDRESS`` or a :class:`distributed.Client`)
    Every task is one ``client.submit`` on an existing Dask distributed cluster
    (``dask scheduler`` / ``dask worker``, or dask-jobqueue on SLURM); results stream
    back with :func:`distributed.as_completed`. Needs the ``sweep`` extra
    (``pip install "optcoll[sweep]"``).

A task that raises is not lost and does not stop the others: its outcome is a
:class:`TaskError` holding the error's one-line message.

Examples
--------
>>> sorted(run_tasks(abs, [-2, 3], workers=1))
[(0, 2), (1, 3)]
>>> dict(run_tasks(int, ["7", "x"], workers=1))[1]
TaskError(message="ValueError: invalid literal for int() with base 10: 'x'")
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from queue import SimpleQueue
from typing import Any

from optcoll.exceptions import OptCollError

__all__ = ["TaskError", "run_tasks", "default_workers", "dask_client"]


@dataclass(frozen=True)
class TaskError:
    """The outcome of a task that raised: ``"ErrorType: message"`` on one line."""

    message: str


def _guarded(function: Callable[[Any], Any], task: Any) -> Any:
    """``function(task)``, or a :class:`TaskError` if it raised (run on the worker)."""
    try:
        return function(task)
    except Exception as err:  # a failed task is recorded, never fatal to the run
        return _task_error(err)


def default_workers() -> int:
    """The cores this process may use (its CPU affinity), at least 1.

    Examples
    --------
    >>> default_workers() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def dask_client(address: str) -> Any:
    """A :class:`distributed.Client` connected to the scheduler at ``address``.

    Raises
    ------
    OptCollError
        Dask is not installed, or no scheduler answers at ``address``.
    """
    try:
        from distributed import Client
    except ImportError:
        raise OptCollError("--dask needs Dask distributed: pip install 'optcoll[sweep]'") from None
    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError, TypeError) as err:
        raise OptCollError(f"no Dask scheduler answers at {address!r} ({err})") from None


def run_tasks(
    function: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    workers: int | None = None,
    dask: Any = None,
    progress: bool = False,
    description: str = "points",
) -> Iterator[tuple[int, Any]]:
    """Evaluate ``function`` on every task; yield ``(index, outcome)`` as each finishes.

    Parameters
    ----------
    function : callable
        A module-level function (picklable) of one task.
    tasks : sequence
        Picklable work units.
    workers : int, optional
        Local processes (default: :func:`default_workers`); 1 runs the tasks in this
        process, in order. Ignored with ``dask``.
    dask : str or distributed.Client, optional
        A scheduler address (``tcp://host:8786``) or a connected client: run on that
        Dask cluster instead of locally. A client made here from an address is closed
        at the end; a client passed in stays open.
    progress : bool
        Show a tqdm bar (on standard error).

    Yields
    ------
    (int, object)
        The task's index in ``tasks`` and ``function(task)``, or a :class:`TaskError`.
    """
    if not tasks:
        return
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), desc=description, leave=False)
    try:
        if dask is not None:
            outcomes = _run_dask(function, tasks, dask)
        elif (workers or default_workers()) == 1 or len(tasks) == 1:
            outcomes = ((i, _guarded(function, task)) for i, task in enumerate(tasks))
        else:
            outcomes = _run_pool(function, tasks, workers or default_workers())
        for index, outcome in outcomes:
            if bar is not None:
                bar.update()
            yield index, outcome
    finally:
        if bar is not None:
            bar.close()


def _run_pool(
    function: Callable[[Any], Any], tasks: Sequence[Any], workers: int
) -> Iterator[tuple[int, Any]]:
    # Starting the workers is not interruptible: a signal between a worker's fork and
    # its registration in the pool would leave a worker nobody stops. A signal sent
    # meanwhile arrives just after. (multiprocessing.Pool, not ProcessPoolExecutor:
    # its terminate() also unblocks a feeder thread stuck on a full pipe of large tasks,
    # where the executor's shutdown hangs on Python 3.11.)
    held = _hold_signals()
    try:
        pool = multiprocessing.Pool(
            min(workers, len(tasks)), initializer=_worker_signals, initargs=(held,)
        )
    finally:
        _release_signals(held)
    finished: SimpleQueue[tuple[int, Any]] = SimpleQueue()
    try:
        for i, task in enumerate(tasks):
            pool.apply_async(
                _guarded,
                (function, task),
                callback=partial(_deliver, finished, i),
                # the task or its result could not be pickled
                error_callback=partial(_deliver_error, finished, i),
            )
        for _ in tasks:
            yield finished.get()
    except BaseException:  # interrupted (Ctrl-C, SIGTERM) or abandoned: stop at once
        pool.terminate()
        raise
    pool.close()
    pool.join()


def _deliver(finished: SimpleQueue[tuple[int, Any]], index: int, outcome: Any) -> None:
    """Hand a finished task's outcome to the waiting loop (in the pool's result thread)."""
    finished.put((index, outcome))


def _deliver_error(finished: SimpleQueue[tuple[int, Any]], index: int, err: BaseException) -> None:
    """Hand a task that could not be sent or answered to the waiting loop, as an error."""
    finished.put((index, _task_error(err)))


def _task_error(err: BaseException) -> TaskError:
    """The :class:`TaskError` of ``err``: its type and its message on one line."""
    text = " ".join(str(err).split())
    return TaskError(f"{type(err).__name__}: {text}" if text else type(err).__name__)


#: The signals that interrupt a run (SIGALRM: the CLI's re-sent interrupt).
_INTERRUPTS = {signal.SIGINT, signal.SIGTERM, signal.SIGALRM}


def _hold_signals() -> set[int | signal.Signals]:
    """Block the interrupting signals in this thread; return the mask to restore."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPTS)


def _release_signals(mask: set[int | signal.Signals]) -> None:
    """Restore the signal mask ``mask``."""
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _worker_signals(mask: set[int | signal.Signals]) -> None:
    """A new worker's signals: Ctrl-C (sent to the whole terminal) is the parent's to
    handle; the parent's SIGTERM ends the worker quietly, wherever it is."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    _release_signals(mask)


def _run_dask(
    function: Callable[[Any], Any], tasks: Sequence[Any], dask: Any
) -> Iterator[tuple[int, Any]]:
    own = isinstance(dask, str)
    client = dask_client(dask) if own else dask
    from distributed import as_completed as dask_completed

    try:
        futures = [client.submit(_guarded, function, task, pure=False) for task in tasks]
        index = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in dask_completed(futures):
                yield index[future.key], future.result()
        finally:
            client.cancel(futures)
    finally:
        if own:
            client.close()
