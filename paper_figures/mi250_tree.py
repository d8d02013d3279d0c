"""Figure: one tree of the optimal allgather schedule of an MI250 box, drawn over
its xGMI mesh and coloured by hop depth (CSV: every tree edge of that root)."""

from __future__ import annotations

from pathlib import Path

from optcoll import load_topology
from optcoll.plot import plot_tree, save_figure
from optcoll.verify.schedule import verify_schedule
from paper_figures._common import optimal_schedule, output_folder, ratio_text, write_csv

ROOT = "b0.gcd0"


def main(out_dir: str | Path | None = None, small: bool = False) -> list[Path]:
    """Write ``mi250_tree.csv`` and ``mi250_tree.png`` (the same at any size: one box)."""
    folder = output_folder(out_dir)
    topo = load_topology("mi250:1")
    schedule = optimal_schedule(topo)
    check = verify_schedule(topo, schedule)
    if not check.valid or check.time_factor != schedule.cut_ratio:
        raise RuntimeError(f"the MI250 schedule does not verify: {check.reason}")
    trees = [t for t in schedule.trees if t.root == ROOT]
    drawn = max(trees, key=lambda t: t.chunks)
    ax = plot_tree(topo, drawn, k=schedule.k)
    ax.set_title(
        f"mi250:1, tree rooted at {ROOT}: {drawn.chunks} of k = {schedule.k} chunks "
        f"({len(trees)} tree{'s' * (len(trees) != 1)} for this root)\n"
        f"the whole schedule verifies with time factor {ratio_text(check.time_factor)} = r*",
        fontsize=9,
    )
    rows = []
    for index, tree in enumerate(trees):
        depth = {tree.root: 0}
        pending = list(tree.edges)
        while pending:
            rest = [e for e in pending if e.src not in depth]
            for e in pending:
                if e.src in depth:
                    depth[e.dst] = depth[e.src] + 1
            if len(rest) == len(pending):
                raise RuntimeError(f"tree {index} of {ROOT} is not an arborescence")
            pending = rest
        for e in tree.edges:
            bandwidth = topo.capacity[(e.src, e.dst)] if len(e.path) == 2 else ""
            rows.append(
                (
                    index,
                    tree.chunks,
                    schedule.k,
                    e.src,
                    e.dst,
                    depth[e.dst],
                    bandwidth,
                    int(tree is drawn),
                )
            )
    header = ("tree", "chunks", "k", "src", "dst", "depth", "link_bandwidth_GBps", "drawn")
    csv_path = write_csv(folder / "mi250_tree.csv", header, rows)
    return [csv_path, save_figure(ax, folder / "mi250_tree.png", force=True)]


if __name__ == "__main__":
    main()
