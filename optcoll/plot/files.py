"""Saving pictures as PNG, PDF or SVG, deterministically and safely."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

from optcoll.core.output import check_output, require_suffix, write_output
from optcoll.exceptions import PlotError

__all__ = ["PICTURE_SUFFIXES", "MAX_DPI", "save_figure"]

#: Picture files :func:`save_figure` writes.
PICTURE_SUFFIXES = (".png", ".pdf", ".svg")

#: Largest resolution :func:`save_figure` accepts (a larger one asks gigabytes of pixels).
MAX_DPI = 1200


def save_figure(
    ax_or_figure: Axes | Figure,
    path: str | Path,
    *,
    dpi: int = 150,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """Write the figure holding ``ax_or_figure`` as PNG (or by suffix: PDF, SVG).

    No time stamp, software tag or random id is embedded, so equal figures give
    equal bytes. The file is written by :func:`optcoll.core.output.write_output`: never
    over an existing file without ``force``, never over one of ``inputs``, never
    half-written; parent folders are created. Another suffix than those of
    :data:`PICTURE_SUFFIXES` raises :class:`~optcoll.exceptions.OutputError`.

    Raises
    ------
    PlotError
        ``dpi`` is not a positive integer.
    OutputError
        The file exists (without ``force``), is an input, or cannot be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from optcoll.plot import plot_algbw_curves
    >>> ax = plot_algbw_curves({"ring": ([1, 2], [1.0, 2.0])}, bytes_axis=False)
    >>> out = save_figure(ax, pathlib.Path(tempfile.mkdtemp()) / "a.png")
    >>> out.read_bytes()[:4]
    b'\\x89PNG'
    """
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 1 <= dpi <= MAX_DPI:
        raise PlotError(f"dpi must be an integer between 1 and {MAX_DPI}, got {dpi!r}")
    figure = ax_or_figure if isinstance(ax_or_figure, Figure) else ax_or_figure.figure
    if isinstance(figure, SubFigure):
        figure = figure.figure  # a subfigure is saved as part of the figure holding it
    path = require_suffix(path, PICTURE_SUFFIXES, "a picture")
    check_output(path, force=force, inputs=inputs)  # before the (slow) drawing
    suffix = path.suffix.lower()
    metadata: dict[str, None] = {"Software": None} if suffix == ".png" else {}
    if suffix == ".svg":
        metadata = {"Date": None}
    elif suffix == ".pdf":
        metadata = {"CreationDate": None, "ModDate": None}
    picture = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "optcoll"}):  # fixed ids in SVG
        figure.savefig(picture, format=suffix.lstrip(".") or None, dpi=dpi, metadata=metadata)
    return write_output(path, picture.getvalue(), force=force, inputs=inputs)
