"""networkx graphs in: optcoll.from_networkx, Topology.from_networkx, and solve/bound/trees
taking a graph, with node ids kept readable."""

from __future__ import annotations

from fractions import Fraction

import networkx as nx
import pytest

import optcoll
from optcoll import Topology, from_networkx, load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.exceptions import ArgumentError, ImportFormatError
from optcoll.schedules.packing import pack_arborescences
from optcoll.verify.schedule import verify_schedule


def test_a_topology_through_networkx_keeps_its_capacities_and_optimum():
    topology = load_topology("dgx-a100:1")
    graph = topology.to_networkx()
    again = Topology.from_networkx(graph)
    assert again.name == "dgx-a100:1" and again.capacity == topology.capacity
    assert {n.id: n.type for n in again.nodes} == {n.id: n.type for n in topology.nodes}
    assert optimal_cut_ratio(graph).ratio == optimal_cut_ratio(topology).ratio == Fraction(7, 300)
    schedule = pack_arborescences(graph)
    assert verify_schedule(topology, schedule, optimum=Fraction(7, 300)).valid


def test_node_ids_strings_and_integers_kept_tuples_joined():
    grid = nx.grid_graph(dim=(2, 2, 2))  # nodes (x, y, z)
    nx.set_edge_attributes(grid, 50, "bandwidth")
    topology = from_networkx(grid, "cube")
    assert sorted(topology.compute_nodes)[:2] == ["0,0,0", "0,0,1"]
    assert topology.capacity[("0,0,0", "0,0,1")] == 50
    ring = nx.cycle_graph(4)
    nx.set_edge_attributes(ring, 25, "bandwidth")
    assert from_networkx(ring).compute_nodes == ("0", "1", "2", "3")
    assert from_networkx(ring).name == "networkx"


def test_solve_takes_a_graph_and_agrees_with_the_same_file(tmp_path):
    graph = nx.Graph(name="star")
    graph.add_node("sw", type="switch")
    for gpu, bandwidth in (("a", 25), ("b", 25), ("c", 12.5)):
        graph.add_edge(gpu, "sw", bw=bandwidth)
    topology = optcoll.from_networkx(graph, bandwidth="bw")
    path = tmp_path / "star.yaml"
    optcoll.save_topology(topology, path)
    from_file = optcoll.solve(path)
    with pytest.raises(ImportFormatError, match="edge .* has no 'bandwidth' attribute"):
        optcoll.solve(graph)  # solve reads the attribute 'bandwidth'
    nx.set_edge_attributes(graph, nx.get_edge_attributes(graph, "bw"), "bandwidth")
    solution = optcoll.solve(graph, collective="allgather")
    assert solution.time_factor == from_file.time_factor and solution.optimal
    # c receives the 2 other shards through its 12.5 GB/s link: 2 / 12.5
    assert solution.time_factor == Fraction(4, 25)


def test_bad_graphs_are_named():
    clash = nx.Graph()
    clash.add_edge(1, "1", bandwidth=1)
    with pytest.raises(ImportFormatError, match=r"nodes 1 and '1' of the graph both become"):
        from_networkx(clash)
    bad = nx.DiGraph()
    bad.add_edge("a", "b", bandwidth="fast")
    with pytest.raises(ImportFormatError, match=r"edge a -> b: bandwidth must be a number"):
        from_networkx(bad)
    with pytest.raises(ImportFormatError, match="expected a networkx graph, got dict"):
        Topology.from_networkx({"a": "b"})
    with pytest.raises(ArgumentError, match="must be a Topology"):
        optimal_cut_ratio({"a": "b"})
