"""LP and MILP models of optimal collective communication (PuLP + HiGHS).

One module per model; each ``build_*`` function returns a :class:`pulp.LpProblem`
without side effects, and :func:`formulations.solve.solve` solves any of them
into a typed result. Floating-point optima are brought back to exact fractions
by :mod:`formulations.rational` and re-verified exactly.

- :mod:`formulations.congestion`: the congestion-bound LP, r* with a certifying cut.
- :mod:`formulations.solve`: the solver front door and model export (``.mps``/``.lp``).
- :mod:`formulations.rational`: integer scaling and rational reconstruction.
"""
