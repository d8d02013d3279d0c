"""Figure: the bottleneck cut S* that certifies r* on dgx-a100 and mi250 (2 boxes),
with the links leaving S* and their bandwidth (CSV: those links)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.plot import plot_cut, save_figure
from paper_figures._common import output_folder, ratio_text, write_csv

FULL = ("dgx-a100:2", "mi250:2")
SMALL = ("dgx-a100:1", "mi250:1")


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``bottleneck_cut.csv`` and ``bottleneck_cut.png``."""
    folder = output_folder(out_dir)
    specs = SMALL if small else FULL
    figure = Figure(figsize=(12, 12), layout="constrained")
    rows = []
    for i, spec in enumerate(specs):
        topo = load_topology(spec)
        bound = optimal_cut_ratio(topo)
        side = bound.bottleneck_cut
        ax = figure.add_subplot(len(specs), 1, i + 1)
        plot_cut(topo, side, ax=ax)
        ax.set_title(f"{spec}: r* = {ratio_text(bound.ratio)}\n{bound.describe_cut()}", fontsize=9)
        for (u, v), c in topo.capacity.items():
            if u in side and v not in side:
                rows.append((spec, ratio_text(bound.ratio), bound.cut_compute, ratio_text(c), u, v))
    header = ("topology", "cut_ratio", "cut_compute", "link_bandwidth_GBps", "src", "dst")
    csv_path = write_csv(folder / "bottleneck_cut.csv", header, rows)
    return [csv_path, save_figure(figure, folder / "bottleneck_cut.png", force=True)]


if __name__ == "__main__":
    main()
