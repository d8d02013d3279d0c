"""Figure: simulated allgather algbw against message size with the certified lower bound,
on dgx-a100:2 and mi250:2, for every candidate of ``optcoll plan``.

Each candidate (optimal k, the power-of-two k's, ring, hierarchical ring) is executed by
the chunk-level simulator (:mod:`optcoll.sim.simulator`, default runtime parameters: 1 µs per
step, 1 µs per link, 512 KiB slices); the dashed line is ``M`` over the lower bound
``max(latency bound, (M/N) r*)`` of :mod:`optcoll.sim.size_plan`, which no schedule exceeds.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from optcoll import load_topology
from optcoll.plot import plot_algbw_curves, save_figure
from optcoll.sim.size_plan import plan
from paper_figures._common import output_folder, write_csv

FULL = ("dgx-a100:2", "mi250:2")
SMALL = ("dgx-a100:1", "mi250:1")
SIZES = tuple(1024 * 8**i for i in range(7)) + (1024**3,)
SMALL_SIZES = (1024, 1024**2, 64 * 1024**2)

HEADER = ("topology", "method", "message_bytes", "time_us", "algbw_GBps", "ratio_to_bound")


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``plan_algbw.csv`` and ``plan_algbw.png``."""
    folder = output_folder(out_dir)
    specs, sizes = (SMALL, SMALL_SIZES) if small else (FULL, SIZES)
    rows = []
    figure = Figure(figsize=(12, 4.4), layout="constrained")
    for i, spec in enumerate(specs):
        topo = load_topology(spec)
        planned = plan(topo, "allgather", sizes)
        curves: dict[str, tuple[list[int], list[float]]] = {}
        for row in planned:
            if row.time_us < row.lower_bound_us * (1 - 1e-12):  # at the bound: float sums
                raise RuntimeError(f"{row.method} beats the lower bound on {spec}")
            for method, time_us in row.candidates:
                if time_us is None:  # too many steps to simulate
                    continue
                xs, ys = curves.setdefault(method, ([], []))
                xs.append(row.size)
                ys.append(row.size / time_us / 1000)
                rows.append(
                    (spec, method, row.size, round(time_us, 3), round(ys[-1], 3),
                     round(time_us / row.lower_bound_us, 4))
                )  # fmt: skip
            bound = curves.setdefault("lower bound", ([], []))
            bound[0].append(row.size)
            bound[1].append(row.size / row.lower_bound_us / 1000)
            rows.append(
                (spec, "lower bound", row.size, round(row.lower_bound_us, 3),
                 round(bound[1][-1], 3), 1.0)
            )  # fmt: skip
        ax = figure.add_subplot(1, len(specs), i + 1)
        plot_algbw_curves(
            curves, ax=ax, xlabel="message size (bytes)", title=f"{spec}: simulated allgather"
        )
        ax.get_lines()[-1].set_linestyle("--")
        ax.get_lines()[-1].set_color("black")
        ax.legend(fontsize=8)
        ax.set_ylim(bottom=0)
    csv_path = write_csv(folder / "plan_algbw.csv", HEADER, rows)
    return [csv_path, save_figure(figure, folder / "plan_algbw.png", force=True)]


if __name__ == "__main__":
    main()
