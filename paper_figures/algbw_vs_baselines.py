"""Figure: optimal allgather algbw against the ring and NCCL-like hierarchical ring
baselines on dgx-a100 and mi250 at 1, 2, 4 and 8 boxes (left: bandwidth limit
N / time factor; right: algbw against message size on dgx-a100:2, simulated by
:mod:`optcoll.sim.simulator`, the one timing model).

The optimum is N / r* from the exact bound (the optimal trees reach it: see
``fixed_k`` and ``mi250_tree``); the baselines come from :mod:`optcoll.sim.cost_model`
on the same topology and routing model.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from optcoll import load_topology
from optcoll.bounds.cut_ratio import optimal_cut_ratio
from optcoll.plot import plot_algbw_curves, save_figure
from optcoll.schedules.baselines import (
    hierarchical_ring_allgather,
    hierarchical_ring_schedule,
    ring_allgather,
    ring_schedule,
)
from optcoll.sim.cost_model import SIZES, schedule_cost
from optcoll.sim.size_plan import method_times
from paper_figures._common import optimal_schedule, output_folder, write_csv

FULL = ({"dgx-a100": (1, 2, 4, 8), "mi250": (1, 2, 4, 8)}, "dgx-a100:2")
SMALL = ({"dgx-a100": (1, 2), "mi250": (1,)}, "dgx-a100:1")

HEADER = ("topology", "gpus", "method", "message_bytes", "algbw_GBps", "ratio_to_optimal")


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``algbw_vs_baselines.csv`` and ``algbw_vs_baselines.png``."""
    folder = output_folder(out_dir)
    families, curve_spec = SMALL if small else FULL
    rows = []
    limits: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for family, sizes in families.items():
        lines = limits.setdefault(family, {})
        for boxes in sizes:
            spec = f"{family}:{boxes}"
            topo = load_topology(spec)
            optimum = Fraction(topo.num_compute) / optimal_cut_ratio(topo).ratio
            methods = {"optimal (N / r*)": optimum}
            methods["ring"] = Fraction(topo.num_compute) / ring_allgather(topo).time_factor
            hierarchical = hierarchical_ring_allgather(topo)
            if hierarchical is not None:
                methods["hierarchical ring"] = Fraction(topo.num_compute) / hierarchical.time_factor
            for method, algbw in methods.items():
                if algbw > optimum:
                    raise RuntimeError(f"{method} beats the optimum on {spec}: the bound is wrong")
                lines.setdefault(method, []).append((boxes, float(algbw)))
                rows.append(
                    (
                        spec,
                        topo.num_compute,
                        method,
                        "",
                        round(float(algbw), 3),
                        round(float(algbw / optimum), 4),
                    )
                )
    topo = load_topology(curve_spec)
    costs = [schedule_cost(topo, optimal_schedule(topo))]
    for ring in (ring_schedule(topo), hierarchical_ring_schedule(topo)):
        if ring is not None:
            costs.append(schedule_cost(topo, ring, str(ring.stats["method"])))
    times = method_times(topo, costs, SIZES)  # the simulator: 1 µs steps, 512K slices
    curves = {}
    for cost, row in zip(costs, times, strict=True):
        points = [(m, m / t / 1000) for m, t in zip(SIZES, row, strict=True) if t is not None]
        curves[cost.method] = ([m for m, _ in points], [a for _, a in points])
        best = dict(zip(SIZES, times[0], strict=True))
        for m, a in points:
            rows.append(
                (
                    curve_spec,
                    topo.num_compute,
                    cost.method,
                    m,
                    round(a, 3),
                    round(a / (m / best[m] / 1000), 4) if best[m] else "",
                )
            )
    csv_path = write_csv(folder / "algbw_vs_baselines.csv", HEADER, rows)
    figure = Figure(figsize=(15, 4.4), layout="constrained")
    for i, (family, lines) in enumerate(limits.items()):
        ax = figure.add_subplot(1, len(limits) + 1, i + 1)
        plot_algbw_curves(
            {m: tuple(zip(*pts, strict=True)) for m, pts in lines.items()},
            ax=ax,
            xlabel="boxes",
            bytes_axis=False,
            title=f"{family}: allgather bandwidth limit",
        )
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_ylim(bottom=0)
    ax = figure.add_subplot(1, len(limits) + 1, len(limits) + 1)
    plot_algbw_curves(
        curves,
        ax=ax,
        xlabel="message size (bytes)",
        title=f"{curve_spec}: algbw with latency (1 us per hop)",
    )
    ax.set_ylim(bottom=0)
    return [csv_path, save_figure(figure, folder / "algbw_vs_baselines.png", force=True)]


if __name__ == "__main__":
    main()
