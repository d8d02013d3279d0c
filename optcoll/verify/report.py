"""What every checker reports: :class:`Finding`\\ s, in a :class:`Report`.

The four checkers (schedules, :mod:`~optcoll.verify.msccl` programs,
:mod:`~optcoll.verify.mscclpp` plans and :mod:`~optcoll.verify.chakra` traces) judge
different things and say different things about them, so each has its own report
class, but all of them derive from :class:`Report`: a list of findings, ``ok`` when
there is none, and one way of capping a long list (:meth:`Report.capped`).

Examples
--------
>>> many = [Finding("deadlock", f"rank {r} waits") for r in range(14)]
>>> kept = capped(many + [Finding("race", "a race"), many[0]])
>>> len(kept), kept[-2].message, kept[-1]
(14, '... and 2 more deadlock findings', Finding(kind='race', message='a race'))
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["Finding", "Report", "Verdict", "capped", "MAX_REPORTED"]

#: Findings of one kind a report lists at most before one that counts the rest.
MAX_REPORTED = 12


class Finding(NamedTuple):
    """One thing wrong: a ``kind`` (``limit``, ``deadlock``, ``wrong-data``, ``format``, ...)
    and a message naming the rank, GPU, thread block, step, node or attribute at fault.

    A named pair, so ``kind, message = finding`` reads it as well.

    Examples
    --------
    >>> Finding("race", "rank 1 reads o[0] before it is written").to_dict()["kind"]
    'race'
    """

    kind: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """``{"kind": ..., "message": ...}``."""
        return {"kind": self.kind, "message": self.message}


def capped(findings: Iterable[Finding], most: int = MAX_REPORTED) -> list[Finding]:
    """``findings`` without repeats, at most ``most`` of each kind (kinds in order of first
    appearance), each kind cut short followed by one finding that counts the rest."""
    by_kind: dict[str, list[Finding]] = defaultdict(list)
    for finding in dict.fromkeys(findings):
        by_kind[finding.kind].append(finding)
    kept = []
    for kind, group in by_kind.items():
        kept += group[:most]
        if len(group) > most:
            kept.append(Finding(kind, f"... and {len(group) - most} more {kind} findings"))
    return kept


class Report:
    """The base of every checker's report: ``findings`` (:class:`Finding`), ``ok`` when
    there is none. A subclass holds ``findings`` as a field or computes it.

    Examples
    --------
    >>> class Seen(Report):
    ...     def __init__(self, findings):
    ...         self.findings = findings
    >>> Seen([]).ok, Seen([Finding("limit", "too many steps")]).ok
    (True, False)
    """

    findings: Sequence[Finding]

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.findings

    def findings_to_dicts(self) -> list[dict[str, str]]:
        """The findings, JSON-ready."""
        return [finding.to_dict() for finding in self.findings]


class Verdict(Report):
    """The base of a report that stops at the first fault it finds: ``valid`` and the
    ``reason`` it is not; its ``findings`` are that one reason (kind ``invalid``).

    A subclass is a frozen dataclass that declares ``findings`` as a field
    (``field(init=False, repr=False, compare=False)``); this fills it.

    Examples
    --------
    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True)
    ... class Seen(Verdict):
    ...     valid: bool
    ...     reason: str | None = None
    ...     findings: tuple[Finding, ...] = field(init=False, repr=False, compare=False)
    >>> Seen(False, "link (a, b) overloaded").findings, Seen(True).ok
    ((Finding(kind='invalid', message='link (a, b) overloaded'),), True)
    """

    valid: bool
    reason: str | None

    def __post_init__(self) -> None:
        found = () if self.valid else (Finding("invalid", self.reason or "invalid"),)
        object.__setattr__(self, "findings", found)
