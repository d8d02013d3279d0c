"""The package imports and the reference topologies build."""

from optcoll import load_topology


def test_reference_topologies_build():
    assert load_topology("dgx-a100:2").num_compute == 16
    assert load_topology("mi250:2").num_compute == 32
