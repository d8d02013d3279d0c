"""Figure: schedule generation time against the number of GPUs (log-log) for
optcoll's exact bound and optimal trees, next to the reference implementation's
timings on the same kind of 2-core machine (CSV: every measurement)."""

from __future__ import annotations

import time
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.plot import save_figure
from paper_figures._common import optimal_schedule, output_folder, reference_seconds, write_csv

FULL = {
    "bound": {"dgx-a100": (1, 2, 4, 8, 16, 32, 64, 128), "mi250": (1, 2, 4, 8)},
    "trees": {"dgx-a100": (1, 2, 4, 8, 16, 32), "mi250": (1, 2, 4)},
}
SMALL = {"bound": {"dgx-a100": (1, 2), "mi250": (1,)}, "trees": {"dgx-a100": (1,)}}

HEADER = ("method", "topology", "gpus", "seconds", "reference_seconds", "speedup")


def _run(method: str, spec: str) -> float:
    topo = load_topology(spec)
    started = time.perf_counter()
    if method == "bound":
        optimal_cut_ratio(topo)
    else:
        optimal_schedule(topo)
    return time.perf_counter() - started


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``generation_time.csv`` and ``generation_time.png``."""
    folder = output_folder(out_dir)
    rows = []
    for method, families in (SMALL if small else FULL).items():
        for family, sizes in families.items():
            for boxes in sizes:
                spec = f"{family}:{boxes}"
                seconds = _run(method, spec)
                ref = reference_seconds(method, spec)
                gpus = load_topology(spec).num_compute
                speedup = round(ref / seconds, 1) if ref else ""
                rows.append((method, spec, gpus, round(seconds, 4), ref or "", speedup))
    csv_path = write_csv(folder / "generation_time.csv", HEADER, rows)
    ax = Figure(figsize=(6.8, 4.6), layout="constrained").add_subplot()
    styles = {"bound": "o", "trees": "s"}
    colours = {"dgx-a100": "#1f77b4", "mi250": "#ff7f0e"}
    for method in dict.fromkeys(r[0] for r in rows):
        for family in colours:
            mine = [r for r in rows if r[0] == method and r[1].startswith(family + ":")]
            if not mine:
                continue
            xs = [r[2] for r in mine]
            ax.plot(
                xs,
                [r[3] for r in mine],
                marker=styles[method],
                color=colours[family],
                linestyle="-" if method == "bound" else "--",
                label=f"optcoll {method}, {family}",
            )
            refs = [(r[2], r[4]) for r in mine if r[4] != ""]
            if refs:
                ax.plot(
                    *zip(*refs, strict=True),
                    marker=styles[method],
                    color=colours[family],
                    markerfacecolor="none",
                    linestyle=":",
                    linewidth=0.8,
                    label=f"reference {method}, {family}",
                )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlabel("GPUs")
    ax.set_ylabel("seconds (wall clock)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("schedule generation time (filled: optcoll, hollow: reference)", fontsize=10)
    return [csv_path, save_figure(ax, folder / "generation_time.png", force=True)]


if __name__ == "__main__":
    main()
