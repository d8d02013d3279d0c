"""Benchmark: the simulator's heap-ordered event loop against the same model in SimPy.

Run from the repository root (SimPy is not a dependency of optcoll; install it for this
benchmark only: ``pip install simpy``)::

    python -m benchmarks.simpy_engine [--specs dgx-a100:2 mi250:2 dgx-a100:16] [--size 1G]

For each topology the optimal allgather's task graph
(:func:`optcoll.sim.simulator.schedule_tasks`) is run twice: by
:func:`optcoll.sim.simulator.simulate` and by a SimPy model of the same rules (the module
docstring of :mod:`optcoll.sim.simulator`): a connection and a link are each a
``PriorityResource`` of capacity 1 served earliest-in-the-data first (``priority`` = the
task's ``order``; SimPy breaks ties by request time, then first come first served), a
step holds its connection for the per-step overhead, a slice holds each link of its path
for ``bytes / bandwidth`` or until its tail has come in (virtual cut-through), and its head
reaches the next link one latency after it entered. The table gives both completion
times (they must agree: the relative difference is printed), CPU seconds of each, and
SimPy's CPU time over the event loop's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table


def simpy_completion(graph, network, overhead: float) -> float:  # type: ignore[no-untyped-def]
    """The completion time (µs) of ``graph`` on ``network`` in a SimPy model of the rules."""
    import simpy

    env = simpy.Environment()
    lanes = [simpy.PriorityResource(env, capacity=1) for _ in graph.lanes]
    links = [simpy.PriorityResource(env, capacity=1) for _ in network.arcs]
    waiting = list(graph.waiting)
    finished = [0.0]

    def release_at(resource, request, when: float) -> None:  # type: ignore[no-untyped-def]
        timer = env.timeout(when - env.now)
        timer.callbacks.append(lambda _event: resource.release(request))

    def task(i: int):  # type: ignore[no-untyped-def]
        order = graph.order[i]
        if graph.lane[i] >= 0:
            lane = lanes[graph.lane[i]]
            request = lane.request(priority=order)
            yield request
            yield env.timeout(overhead)
            lane.release(request)
        path = graph.path[i]
        tail = env.now
        for hop, arc in enumerate(path):
            request = links[arc].request(priority=order)
            yield request
            begin = env.now
            finish = begin + graph.size[i] / network.rate[arc]
            if hop and tail > finish:
                finish = tail
            tail = finish + network.latency[arc]
            release_at(links[arc], request, finish)
            if hop + 1 < len(path):
                yield env.timeout(network.latency[arc])
        if tail > env.now:
            yield env.timeout(tail - env.now)
        finished[0] = max(finished[0], env.now)
        for j in graph.successors[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                env.process(task(j))

    for i in range(len(graph)):
        if waiting[i] == 0:
            env.process(task(i))
    env.run()
    return finished[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=["dgx-a100:2", "mi250:2", "dgx-a100:16"])
    parser.add_argument("--size", default="1G", help="message size (K, M, G units)")
    args = parser.parse_args(argv)
    try:
        import simpy  # noqa: F401
    except ImportError:
        print("this benchmark needs SimPy: pip install simpy", file=sys.stderr)
        return 2
    from optcoll.core.sizes import parse_size
    from optcoll.schedules.packing import pack_arborescences
    from optcoll.sim.simulator import DEFAULT_OVERHEAD, Network, schedule_tasks, simulate
    from optcoll.topologies import build

    size = parse_size(args.size)
    rows = []
    for spec in args.specs:
        topology = build(spec)
        network = Network.of(topology)
        graph = schedule_tasks(pack_arborescences(topology), network, size)
        start = time.process_time()
        ours = simulate(graph, network, size, overhead=DEFAULT_OVERHEAD).time_us
        ours_cpu = time.process_time() - start
        start = time.process_time()
        theirs = simpy_completion(graph, network, DEFAULT_OVERHEAD)
        simpy_cpu = time.process_time() - start
        rows.append(
            [
                spec,
                str(len(graph)),
                f"{ours:.3f}",
                f"{theirs:.3f}",
                f"{abs(theirs - ours) / ours:.1e}",
                f"{ours_cpu:.2f}",
                f"{simpy_cpu:.2f}",
                f"{simpy_cpu / ours_cpu:.1f}x",
            ]
        )
        print(f"done {spec}", file=sys.stderr)
    print_table(
        [
            "topology",
            "tasks",
            "heap µs",
            "SimPy µs",
            "rel. diff",
            "heap cpu s",
            "SimPy cpu s",
            "SimPy/heap",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
