"""Figure: a small instance of every fabric family added for issue 40 (dragonfly, HyperX,
twisted torus, rail-optimised fat-tree, GB200 NVL72, composed cluster), one PNG each and
a CSV naming each spec, its size, r* and the source of the family's definition.

``python -m paper_figures.families --each docs/families`` writes the pictures that
``docs/pictures.md`` shows, one file per family.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.plot import plot_topology, save_figure
from paper_figures._common import output_folder, ratio_text, write_csv

#: family -> (small spec, source of the definition)
FAMILIES = {
    "dragonfly": (
        "dragonfly:a=4,p=2,h=1,g=5",
        "Kim, Dally, Scott, Abts, Technology-Driven, Highly-Scalable Dragonfly Topology, ISCA 2008",
    ),
    "hyperx": (
        "hyperx:3x3,t=2",
        "Ahn, Binkert, Davis, McLaren, Schreiber, HyperX, SC 2009",
    ),
    "twisted-torus": (
        "twisted-torus:2x2x4",
        "Camara et al., Twisted Torus Topologies, IEEE TPDS 2010; Jouppi et al., TPU v4, ISCA 2023",
    ),
    "rail-fat-tree": (
        "rail-fat-tree:servers=4,gpus=4,per_leaf=2,spines=2",
        "NVIDIA DGX SuperPOD reference architecture (rail-optimised two-tier fabric)",
    ),
    "nvl72": ("nvl72", "NVIDIA GB200 NVL72 product page (72 GPUs, 9 NVLink switch trays)"),
    "cluster": (
        "cluster:servers=4x4,box=fc,box_bw=100,nic_bw=25,fabric=leaf-spine,per_leaf=2,spines=2,oversub=2",
        "optcoll composition: server template into a leaf-spine (issue 40's 4x4 example)",
    ),
}
#: The families drawn at the small size (the test suite's run).
SMALL = ("dragonfly", "hyperx")


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``families.csv`` and ``families.png`` (every family, one panel each)."""
    folder = output_folder(out_dir)
    names = SMALL if small else tuple(FAMILIES)
    figure = Figure(figsize=(12, 6 * len(names)), layout="constrained")
    rows = []
    for i, family in enumerate(names):
        rows.append(_draw(family, figure.add_subplot(len(names), 1, i + 1)))
    header = ("family", "spec", "compute_nodes", "nodes", "directed_links", "cut_ratio", "source")
    csv_path = write_csv(folder / "families.csv", header, rows)
    return [csv_path, save_figure(figure, folder / "families.png", force=True)]


def write_each(folder: str | Path) -> list[Path]:
    """``family_<name>.png`` for every family into ``folder`` (the pictures of the docs)."""
    written = []
    for family in FAMILIES:
        figure = Figure(figsize=(9, 7), layout="constrained")
        _draw(family, figure.add_subplot())
        path = Path(folder) / f"family_{family.replace('-', '_')}.png"
        written.append(save_figure(figure, path, force=True))
    return written


def _draw(family: str, ax: Axes) -> tuple[object, ...]:
    """Draw ``family``'s small instance on ``ax``; its CSV row."""
    spec, source = FAMILIES[family]
    topo = load_topology(spec)
    ratio = optimal_cut_ratio(topo).ratio
    plot_topology(topo, ax=ax, labels=topo.num_compute <= 40, title=f"{spec}\n{source}")
    ax.title.set_fontsize(8)
    return (family, spec, topo.num_compute, len(topo.node_ids), len(topo.capacity),
            ratio_text(ratio), source)  # fmt: skip


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--each"]:
        write_each(sys.argv[2])
    else:
        main()
