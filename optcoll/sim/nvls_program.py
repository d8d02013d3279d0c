"""plan's model of the in-network (NVLS) allreduce as the MSCCL++ switch-channel program
that ``optcoll export --format mscclpp`` writes (:mod:`optcoll.export.mscclpp_nvls`).

Where every compute node links to the same switches that reduce and multicast at a GPU's
request (one ``multimem`` NVLS domain: ``dgx-h100:1,nvls=1``, ``nvl72:nvls=1``), the
exported program is the same whichever aggregation trees ``plan`` chose: every GPU ``r``
reduces its ``1 / N`` shard in :data:`NVLS_THREADBLOCKS` thread blocks, block ``b``
running one ``glres`` per pipeline unit of its chunk ``r B + b`` (``M / (N B)`` bytes),
between two barriers on memory channels (:func:`optcoll.core.aggregation.barrier_peers`).
:func:`nvls_program_tasks` builds, task for task and in the same order, the task graph
that the simulator's MSCCL++ reader (:func:`optcoll.sim.programs.mscclpp_tasks`) builds
from that file, so plan's time of its NVLS candidate is the file's time, and plan's
search for the slice is a search over the file's runs at the simulator's slice
(``tests/sim/test_nvls_program.py`` compares the two to the ns). The pipeline unit is the
writer's (:func:`nvls_unit`); plan's slice cuts each unit's transfers, as ``simulate
--slice`` cuts the file's.

What the model shares with the reader: the bytes of one slice of a ``glres`` on the
switches (:func:`optcoll.sim.programs.switch_tasks`), split among the domain's switches
in proportion to the GPU's links to them (9 trays on ``nvl72``: a slice of ``s`` bytes
puts ``s / 9`` on each tray link, where a tree per (GPU, tray) put ``s`` on one). What it
builds itself: the ops of each thread block (a barrier round is one signal, one wait and
one ``nop``, where the file splits a round's 16 peers into ops of 8: zero-cost steps in
one chain either way, so no time moves; signals and waits cost no overhead, a ``glres``
one per unit on its block's lane), and which signal each wait waits for.

Examples
--------
>>> from optcoll.topologies import build
>>> from optcoll.sim.simulator import Network, simulate
>>> topo = build("dgx-h100:1,nvls=1")
>>> network = Network.of(topo)
>>> quotient = program_quotient(topo, network)
>>> graph = nvls_program_tasks(topo, network, 2**20, unit=nvls_unit(topo), quotient=quotient)
>>> round(simulate(graph, network, 2**20, ties=range(len(graph))).time_us, 4)
7.6967
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optcoll.core.aggregation import barrier_peers
from optcoll.core.schedule import Rotation
from optcoll.core.topology import Topology
from optcoll.sim.programs import switch_tasks
from optcoll.sim.quotient import Quotient, free_quotient
from optcoll.sim.simulator import DEFAULT_SLICE, Network, TaskGraph, _slices

__all__ = [
    "NVLS_THREADBLOCKS",
    "OP_COST_US",
    "UNIT_MARGIN",
    "MIN_UNIT",
    "MAX_UNIT",
    "nvls_unit",
    "NvlsProgram",
    "switch_program",
    "program_quotient",
    "nvls_program_tasks",
    "nvls_program_task_count",
]

#: Thread blocks per GPU (each reduces ``1 / blocks`` of the GPU's shard): the
#: ``instances=8`` of MSCCL++'s own NVLS allreduce example
#: (``python/mscclpp/language/tests/single_node/allreduce_nvls_zero_copy.py``).
NVLS_THREADBLOCKS = 8
#: The µs a thread block was taken to spend issuing one op (the simulator's default step
#: overhead, :data:`optcoll.sim.simulator.DEFAULT_OVERHEAD`): a pipeline unit is chosen
#: to take :data:`UNIT_MARGIN` times as long on the wire (:func:`nvls_unit`, and
#: :func:`optcoll.export.mscclpp.pipeline_unit` for tree plans).
OP_COST_US = 1
UNIT_MARGIN = 1.25
#: Smallest and largest pipeline unit those rules choose (bytes).
MIN_UNIT, MAX_UNIT = 2**16, 2**24


def nvls_unit(topology: Topology, blocks: int = NVLS_THREADBLOCKS) -> int:
    """The least ``pipeline`` unit (bytes) of the switch-channel program: the smallest
    power of two (64 KiB to 16 MiB) at which one round of ``glres`` ops, a unit from each
    of the ``N x blocks`` thread blocks, keeps every GPU's links to the switches busy
    (``(N + 1) x blocks x unit`` bytes, the loads of every block and its own GPU's
    stores) longer than a block takes to issue its op (:data:`OP_COST_US`, x
    :data:`UNIT_MARGIN`), as :func:`optcoll.export.mscclpp.pipeline_unit` does for trees.
    Units let a GPU's stores and the switch's copies of early units run while later
    units load.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> nvls_unit(build("dgx-h100:1,nvls=1")) // 1024
    64
    """
    nodes = topology.compute_nodes
    domain = topology.nvls_domain()
    rate = min(float(sum(topology.capacity[(g, w)] for w in domain)) for g in nodes)
    wanted = rate * 1000 * OP_COST_US * UNIT_MARGIN / ((len(nodes) + 1) * blocks)
    unit = MIN_UNIT
    while unit < wanted and unit < MAX_UNIT:
        unit *= 2
    return unit


@dataclass(frozen=True)
class NvlsProgram:
    """The switch-channel program of the in-network allreduce on ``topology``: ``blocks``
    thread blocks a GPU, pipeline units of ``unit`` bytes (:func:`switch_program`)."""

    topology: Topology
    unit: int
    blocks: int = NVLS_THREADBLOCKS

    def tasks(
        self,
        network: Network,
        size: int,
        slice_bytes: int | None,
        quotient: Quotient | None = None,
    ) -> TaskGraph:
        """:func:`nvls_program_tasks` of this program."""
        return nvls_program_tasks(self.topology, network, size, unit=self.unit,
                                  blocks=self.blocks, slice_bytes=slice_bytes,
                                  quotient=quotient)  # fmt: skip

    def task_count(self, size: int, slice_bytes: int | None) -> int:
        """:func:`nvls_program_task_count` of this program (every rank's)."""
        topology = self.topology
        return nvls_program_task_count(topology.num_compute, len(topology.nvls_domain()), size,
                                       self.unit, slice_bytes, self.blocks)  # fmt: skip


def switch_program(topology: Topology) -> NvlsProgram | None:
    """The program plan times ``topology``'s in-network allreduce as, where its compute
    nodes share one NVLS domain of ``multimem`` switches (the program is what runs there,
    whichever the trees), in the writer's units (:func:`nvls_unit`); None where they do
    not (plan times aggregation trees).

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> switch_program(build("nvl72:nvls=1")).unit // 1024, switch_program(build("star:8,sharp=1"))
    (64, None)
    """
    domain = topology.nvls_domain()
    if topology.num_compute < 2 or not any(topology.node[w].multimem for w in domain):
        return None
    return NvlsProgram(topology, nvls_unit(topology))


def program_quotient(topology: Topology, network: Network) -> Quotient | None:
    """The quotient the reader simulates a switch-channel program from
    (:func:`optcoll.sim.programs.mscclpp_quotient`: every rank runs rank 0's program
    rotated, which the writer makes so): the rotation of the compute nodes by one place,
    switches fixed, where it is an automorphism of the network that moves every link
    (:func:`optcoll.sim.quotient.free_quotient`); None: the program runs in full."""
    compute = topology.compute_nodes
    n = len(compute)
    if n < 2:
        return None
    rotation = Rotation(n, {v: compute[(i + 1) % n] for i, v in enumerate(compute)})
    return free_quotient(topology, network, rotation, compute[:1])


def nvls_program_task_count(
    n: int, switches: int, size: int, unit: int, slice_bytes: int | None,
    blocks: int = NVLS_THREADBLOCKS,
) -> int:  # fmt: skip
    """How many transfer tasks :func:`nvls_program_tasks` builds for all ``n`` ranks
    (``switches`` in the domain; its quotient builds ``1 / n`` of them): per slice of a
    unit, on every switch, ``n`` loads up, the sum down, the store up and ``n`` copies.

    Examples
    --------
    >>> nvls_program_task_count(8, 1, 2**20, 2**16, 2**13)  # 2 slices of 8 KiB a chunk
    2304
    """
    chunk = size / (n * blocks)
    iterations = max(1, math.ceil(chunk / unit))
    slices = sum(
        _slices(max(0.0, min(chunk - i * unit, unit)), slice_bytes)[0] for i in range(iterations)
    )
    return n * blocks * slices * switches * (2 * n + 2)


def nvls_program_tasks(
    topology: Topology,
    network: Network,
    size: int,
    *,
    unit: int,
    blocks: int = NVLS_THREADBLOCKS,
    slice_bytes: int | None = DEFAULT_SLICE,
    quotient: Quotient | None = None,
) -> TaskGraph:
    """The task graph of the switch-channel program of a ``size``-byte allreduce with
    ``blocks`` thread blocks per GPU and pipeline unit ``unit``, as the MSCCL++ reader
    builds it from the file (module docstring), each transfer of a unit cut in slices of
    ``slice_bytes``; from ``quotient`` (:func:`program_quotient`): rank 0's tasks on one
    link per orbit, rank 0's ``n``-th wait for rank ``p`` waiting for its own ``n``-th
    signal to ``-p``, the image of ``p``'s.

    Examples
    --------
    >>> from optcoll.topologies import build
    >>> topo = build("dgx-h100:1,nvls=1")
    >>> len(nvls_program_tasks(topo, Network.of(topo), 2**20, unit=2**16, slice_bytes=2**13))
    2752
    """
    compute = topology.compute_nodes
    n = len(compute)
    if quotient is not None:
        network = quotient.network(network)
    domain = topology.nvls_domain()
    chunk = size / (n * blocks)
    iterations = max(1, math.ceil(chunk / unit))
    graph = TaskGraph()
    links = _Signals(quotient is not None)
    for rank in range(1 if quotient is not None else n):
        group = [(rank + d) % n for d in range(n)]  # every rank, in order after this one
        rounds = barrier_peers(rank, n)
        for block in range(blocks):
            last = _barrier(graph, links, (rank, n, block), rounds, [], [], final=False)
            sent: list[int] = []
            for i in range(iterations):
                task = graph.add(("tb", rank, block), (), 0.0, last)
                last = [task]
                count, piece = _slices(max(0.0, min(chunk - i * unit, unit)), slice_bytes)
                sent = []
                for s in range(count):
                    sent += switch_tasks(graph, topology, network, rank, group, group, piece,
                                         task, (i + s / count) / iterations,
                                         domain=domain)  # fmt: skip
            last = [graph.add(None, (), 0.0, last)]
            _barrier(graph, links, (rank, n, block), rounds, last, sent, final=True)
    taken: dict[tuple[int, int, int], int] = {}
    for task, key in links.waits:
        number = taken.get(key, 0)
        taken[key] = number + 1
        for before in links.signals[key][number]:
            graph.successors[before].append(task)
            graph.waiting[task] += 1
    return graph


class _Signals:
    """The signals of a program (by sender, receiver and block: the tasks each orders, in
    order) and its waits (task, the signal's key); ``folded``: keyed as from the quotient
    (rank 0's wait for ``p`` takes its own signal to ``-p``)."""

    def __init__(self, folded: bool) -> None:
        self.folded = folded
        self.signals: dict[tuple[int, int, int], list[list[int]]] = {}
        self.waits: list[tuple[int, tuple[int, int, int]]] = []


def _barrier(
    graph: TaskGraph,
    links: _Signals,
    where: tuple[int, int, int],
    rounds: list[tuple[list[int], list[int]]],
    last: list[int],
    sent: list[int],
    *,
    final: bool,
) -> list[int]:
    """One barrier's ops of block ``where = (rank, n, block)`` after ``last``: per round
    a signal (ordering ``sent``, or itself), a wait and a ``nop`` (none after the
    program's last wait, ``final``)."""
    rank, n, block = where
    for number, (out, into) in enumerate(rounds):
        last = [graph.add(None, (), 0.0, last)]
        for peer in out:
            links.signals.setdefault((rank, peer, block), []).append(sent or last)
        last = [graph.add(None, (), 0.0, last)]
        for peer in into:
            key = (0, (rank - peer) % n, block) if links.folded else (peer, rank, block)
            links.waits.append((last[0], key))
        if not final or number < len(rounds) - 1:
            last = [graph.add(None, (), 0.0, last)]
    return last
