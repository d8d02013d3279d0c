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
    :class:`concurrent.futures.ProcessPoolExecutor` with ``workers`` processes (all
    cores by default).
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

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
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
        text = " ".join(str(err).split())
        return TaskError(f"{type(err).__name__}: {text}" if text else type(err).__name__)


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
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
        futures: dict[Any, int] = {}
        try:  # submitting starts the workers: an interrupt there must kill them too
            for i, task in enumerate(tasks):
                futures[pool.submit(_guarded, function, task)] = i
            for future in as_completed(futures):
                try:
                    outcome = future.result()
                except Exception as err:  # the task or its result could not be pickled
                    outcome = TaskError(f"{type(err).__name__}: {' '.join(str(err).split())}")
                yield futures[future], outcome
        except BaseException:  # interrupted (Ctrl-C, SIGTERM) or abandoned: stop at once
            _kill_workers(pool)
            raise
        finally:
            for future in futures:
                future.cancel()


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """End ``pool``'s worker processes now, even inside a long solve (``shutdown`` alone
    waits for every running task to finish)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        process.kill()
    for process in processes:
        process.join()  # the pool then finds them dead and shuts down without waiting


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
