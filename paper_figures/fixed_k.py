"""Figure: algbw of the best schedule with exactly k chunks per root, against k,
with the optimum N/r* it reaches at ForestColl's k (CSV: every point, verified)."""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

from matplotlib.figure import Figure

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.plot import plot_algbw_curves, save_figure
from optcoll.schedules.packing import pack_arborescences
from optcoll.verify.schedule import verify_schedule
from paper_figures._common import output_folder, ratio_text, reference, write_csv

FULL = {"mi250:1": range(1, 7), "dgx-a100:2": range(1, 14), "mi250:2": range(1, 5)}
SMALL = {"mi250:1": range(1, 4)}

HEADER = (
    "topology",
    "k",
    "time_factor",
    "algbw_GBps",
    "optimal_algbw_GBps",
    "ratio_to_optimum",
    "reference_algbw_GBps",
    "verified",
    "seconds",
)


def _reference_fixed_k(spec: str, k: int) -> float | str:
    family, _, boxes = spec.partition(":")
    for entry in reference().get("fixed_k_optima", []):
        if entry["topology"] == family and str(entry["boxes"]) == boxes and entry["k"] == k:
            return entry["algbw"]
    return ""


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``fixed_k.csv`` and ``fixed_k.png``."""
    folder = output_folder(out_dir)
    rows = []
    curves = {}
    optima = {}
    for spec, ks in (SMALL if small else FULL).items():
        topo = load_topology(spec)
        bound = optimal_cut_ratio(topo)
        optima[spec] = bound.algbw
        points = []
        for k in ks:
            started = time.perf_counter()
            schedule = pack_arborescences(topo, k=k)
            seconds = time.perf_counter() - started
            check = verify_schedule(topo, schedule)
            verified = check.valid and check.time_factor == schedule.time_factor
            algbw = float(Fraction(topo.num_compute) / schedule.time_factor)
            points.append((k, algbw))
            rows.append(
                (
                    spec,
                    k,
                    ratio_text(schedule.time_factor),
                    round(algbw, 3),
                    round(bound.algbw, 3),
                    ratio_text(bound.ratio / schedule.time_factor),
                    _reference_fixed_k(spec, k),
                    verified,
                    round(seconds, 3),
                )
            )
        curves[f"{spec} (optimum at k = {bound.k})"] = tuple(zip(*points, strict=True))
    csv_path = write_csv(folder / "fixed_k.csv", HEADER, rows)
    ax = Figure(figsize=(6.5, 4.2), layout="constrained").add_subplot()
    plot_algbw_curves(curves, ax=ax, xlabel="chunks per root k", bytes_axis=False)
    for line, spec in zip(ax.get_lines(), optima, strict=True):
        ax.axhline(optima[spec], color=line.get_color(), linestyle="--", linewidth=0.9)
    refs = [(r[1], r[6]) for r in rows if r[6] != ""]
    if refs:
        ax.scatter(
            *zip(*refs, strict=True),
            s=90,
            facecolors="none",
            edgecolors="black",
            zorder=5,
            label="reference (k fixed)",
        )
    ax.set_title("best algbw with k chunks per root (dashed: optimum N / r*)", fontsize=10)
    ax.legend(fontsize=8)
    return [csv_path, save_figure(ax, folder / "fixed_k.png", force=True)]


if __name__ == "__main__":
    main()
