"""Figures and tables of the optcoll paper, one module per figure.

Every module has ``main(out_dir=None, small=False) -> list[Path]`` that writes
a PNG and a CSV (into ``paper_figures/out/`` by default) and returns their
paths; ``small=True`` runs the same code on the smallest instances (the test
suite does this). ``python -m paper_figures`` regenerates everything.
"""

from __future__ import annotations

#: Module names, in the order ``python -m paper_figures`` runs them.
FIGURES = (
    "algbw_vs_baselines",
    "optima_table",
    "bottleneck_cut",
    "mi250_tree",
    "fixed_k",
    "generation_time",
    "plan_algbw",
    "families",
)
