"""Which program of a collective goes to which file: ``export -o FILE`` writes FILE.

A runtime may need one program per placement (out of place: input and output are
separate buffers; in place: the input is part of the output) or one program that serves
both. The rule, the same for MSCCL XML and MSCCL++ plans and for the command line and
:func:`optcoll.export.export_schedule`: FILE holds the out-of-place program (or the one
program serving both); ``inplace`` puts the in-place program there instead; ``both``
writes FILE out of place and the in-place program beside it as ``STEM.inplace.SUFFIX``.

Examples
--------
>>> placement_paths("ag.xml", ("outofplace", "inplace"), "both")
(('outofplace', PosixPath('ag.xml')), ('inplace', PosixPath('ag.inplace.xml')))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from optcoll.exceptions import ExportError

__all__ = ["PLACEMENT_CHOICES", "placement_paths"]

#: What ``--placement`` (``placement=``) may ask for; None means ``outofplace``.
PLACEMENT_CHOICES = ("outofplace", "inplace", "both")


def placement_paths(
    path: str | Path,
    programs: Sequence[str],
    placement: str | None = None,
    *,
    what: str = "this collective",
) -> tuple[tuple[str, Path], ...]:
    """The programs to write for ``placement`` and their files; the first is ``path``.

    Parameters
    ----------
    path : str or Path
        The file the user named.
    programs : sequence of str
        The programs the runtime runs for the collective: ``("both",)`` (one serves
        either placement), ``("outofplace", "inplace")`` or ``("outofplace",)``.
    placement : str, optional
        ``outofplace`` (default), ``inplace`` or ``both``.
    what : str
        The runtime and collective, for the error message.

    Raises
    ------
    ExportError
        An unknown ``placement``, or ``inplace`` where the runtime runs no in-place
        program.

    Examples
    --------
    >>> placement_paths("ar.xml", ("both",), "inplace")
    (('both', PosixPath('ar.xml')),)
    >>> placement_paths("a2a.json", ("outofplace",), "inplace")
    Traceback (most recent call last):
    ...
    optcoll.exceptions.ExportError: this collective runs no in-place program: drop --placement inplace (placement='inplace')
    """
    path = Path(path)
    if placement is not None and placement not in PLACEMENT_CHOICES:
        raise ExportError(
            f"unknown placement {placement!r}; valid: outofplace (default), inplace, both"
        )
    if tuple(programs) == ("both",):
        return (("both", path),)
    if placement == "inplace":
        if "inplace" not in programs:
            raise ExportError(
                f"{what} runs no in-place program: drop --placement inplace (placement='inplace')"
            )
        return (("inplace", path),)
    if placement == "both":
        first, *others = programs
        siblings = tuple((p, path.with_name(f"{path.stem}.{p}{path.suffix}")) for p in others)
        return ((first, path), *siblings)
    return (("outofplace", path),)
