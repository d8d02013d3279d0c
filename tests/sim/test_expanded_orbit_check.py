"""check_expanded checks one link per orbit: it agrees with every transfer mapped onto
every translate's link (a brute force in plain Python), and a group that moves a link
twice onto one link (two translates of a slice at once) fails it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest

from optcoll.exceptions import ScheduleError
from optcoll.schedules.packing import pack_arborescences
from optcoll.sim.quotient import check_expanded, schedule_quotient, schedule_quotient_tasks
from optcoll.sim.simulator import Network, simulate
from optcoll.topologies import build

MiB = 2**20


def _recorded(spec: str):
    topo = build(spec)
    schedule = pack_arborescences(topo)
    network = Network.of(topo)
    quotient = schedule_quotient(schedule, topo, network)
    assert quotient is not None
    graph = schedule_quotient_tasks(schedule, quotient, network, MiB)
    run = simulate(graph, network, MiB, ties=range(len(graph)), record=True)
    return schedule, quotient, network, graph, run


def _clashes(quotient, network, graph, transfers) -> int:
    """Brute force: every transfer on every translate's link, per link its spans sorted;
    how many follow one still being sent."""
    number = quotient._numbers()
    on: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for t, h, b, e in transfers:
        u, v = network.arcs[graph.path[t][h]]
        for row in quotient.elements.tolist():
            on[(row[number[u]], row[number[v]])].append((b, e))
    assert len(on) == len(network.arcs)  # every link carries a translate
    clashes = 0
    for spans in on.values():
        spans.sort()
        clashes += sum(
            later[0] < earlier[1] for earlier, later in zip(spans[:-1], spans[1:], strict=True)
        )
    return clashes


@pytest.mark.parametrize("spec", ["torus:4x4", "hypercube:3"])
def test_orbit_check_agrees_with_every_translate(spec):
    schedule, quotient, network, graph, run = _recorded(spec)
    assert _clashes(quotient, network, graph, run.transfers) == 0
    checked = check_expanded(schedule, quotient, network, MiB, run)
    assert checked == quotient.order * len(run.transfers)
    # a transfer moved to begin with another on its link's orbit: both find the clash
    spans = list(run.transfers)
    on = [graph.path[t][h] for t, h, _, _ in spans]
    on = [quotient.arc_class[a] for a in on]
    later = next(i for i in range(1, len(spans)) if on[i] in on[:i])
    earlier = on.index(on[later])
    t, h, _, e = spans[later]
    spans[later] = (t, h, spans[earlier][2], e)
    assert _clashes(quotient, network, graph, spans) > 0
    with pytest.raises(ScheduleError, match="at once"):
        check_expanded(schedule, quotient, network, MiB, replace(run, transfers=tuple(spans)))


def test_an_element_listed_twice_sends_every_slice_twice():
    schedule, quotient, network, graph, run = _recorded("torus:4x4")
    doubled = replace(quotient, elements=np.vstack((quotient.elements, quotient.elements[1:2])))
    assert _clashes(doubled, network, graph, run.transfers) > 0
    with pytest.raises(ScheduleError, match="sends two slices at once"):
        check_expanded(schedule, doubled, network, MiB, run)
