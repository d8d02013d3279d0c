"""Table: optimal allgather cut ratio r*, algbw and k of dgx-a100 and mi250, ours
against the reference values (PNG: algbw against the number of GPUs)."""

from __future__ import annotations

import time
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.plot import plot_algbw_curves, save_figure
from paper_figures._common import output_folder, ratio_text, reference_optimum, write_csv

FULL = {"dgx-a100": (1, 2, 4, 8, 16, 32, 64, 128), "mi250": (1, 2, 4, 8)}
SMALL = {"dgx-a100": (1, 2), "mi250": (1,)}

HEADER = (
    "topology",
    "boxes",
    "gpus",
    "cut_ratio",
    "reference_cut_ratio",
    "agrees",
    "algbw_GBps",
    "k",
    "reference_k",
    "bottleneck_cut",
    "seconds",
)


def rows(small: bool = False) -> list[tuple]:
    """One row per instance: our exact optimum next to the reference one."""
    result = []
    for family, sizes in (SMALL if small else FULL).items():
        for boxes in sizes:
            topo = load_topology(f"{family}:{boxes}")
            started = time.perf_counter()
            bound = optimal_cut_ratio(topo)
            seconds = time.perf_counter() - started
            ref = reference_optimum(family, boxes) or {}
            ours = ratio_text(bound.ratio)
            result.append(
                (
                    family,
                    boxes,
                    topo.num_compute,
                    ours,
                    ref.get("cut_ratio", ""),
                    "" if not ref else ours == ref["cut_ratio"],
                    round(bound.algbw, 3),
                    bound.k,
                    ref.get("k", ""),
                    bound.describe_cut(),
                    round(seconds, 4),
                )
            )
    return result


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``optima_table.csv`` and ``optima_table.png``."""
    folder = output_folder(out_dir)
    table = rows(small)
    csv_path = write_csv(folder / "optima_table.csv", HEADER, table)
    ax = Figure(figsize=(6.5, 4.2), layout="constrained").add_subplot()
    curves = {}
    for family in dict.fromkeys(r[0] for r in table):
        mine = [r for r in table if r[0] == family]
        curves[f"{family} (optcoll, exact)"] = ([r[2] for r in mine], [r[6] for r in mine])
    plot_algbw_curves(curves, ax=ax, xlabel="GPUs", bytes_axis=False)
    refs = [(r[2], reference_optimum(r[0], r[1])["algbw"]) for r in table if r[4]]
    ax.scatter(
        *zip(*refs, strict=True),
        s=90,
        facecolors="none",
        edgecolors="black",
        linewidths=0.8,
        zorder=5,
        label="reference optimum",
    )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_title("optimal allgather algbw (N / r*)", fontsize=10)
    ax.legend(fontsize=8)
    return [csv_path, save_figure(ax, folder / "optima_table.png", force=True)]


if __name__ == "__main__":
    main()
