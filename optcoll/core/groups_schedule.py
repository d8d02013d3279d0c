"""Concurrent process groups' schedules: the data and their file form.

A :class:`GroupsSchedule` holds one :class:`~optcoll.core.schedule.Schedule` per group
(its ``compute_nodes`` are the members, its ``k`` and ``trees`` its own) and the
claimed time factor of all groups at once. They are built by
:mod:`optcoll.groups.schedule` and checked by
:func:`optcoll.verify.schedule.verify_groups_schedule`.

The file form (``to_dict``) keeps the schedule file's header and has, instead
of ``compute_nodes``, ``k`` and ``trees``, a list ``groups`` of
``{"members": [...], "k": K, "trees": [...]}`` (trees as in a schedule file),
with ``relay`` and ``time_factor`` at the top level. A broadcast or reduce group has
a ``"root"`` too. Group g's shard (for broadcast and reduce its message) is cut in
its own ``k_g`` chunks; a link's load is ``sum_g chunks_g(e) / k_g`` shards and
the time factor the largest load over bandwidth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from optcoll.core.rational import fraction_text, parse_fraction
from optcoll.core.schedule import SCHEDULE_VERSION, Schedule
from optcoll.exceptions import ScheduleError

__all__ = ["GROUP_COLLECTIVES", "ROOTED_COLLECTIVES", "GroupsSchedule"]

#: The collectives concurrent groups run (canonical spellings).
GROUP_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")
_FIELDS = {
    "format",
    "version",
    "collective",
    "topology",
    "topology_hash",
    "relay",
    "time_factor",
    "groups",
    "stats",
}
_GROUP_FIELDS = {"members", "k", "trees"}

#: The group collectives with one root per group (its first member).
ROOTED_COLLECTIVES = ("broadcast", "reduce")


@dataclass(frozen=True)
class GroupsSchedule:
    """Concurrent groups' allgather schedules on one topology.

    ``groups[i]`` is group i's schedule (its ``compute_nodes`` are the
    members, its ``k`` and ``trees`` its own); ``time_factor`` the claimed
    time of all groups at once per unit shard (1/bandwidth units).
    """

    collective: str
    topology: str
    relay: str
    groups: tuple[Schedule, ...]
    time_factor: Fraction | None = None
    topology_hash: str | None = field(default=None, compare=False)
    stats: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:
        factor = "" if self.time_factor is None else f", time factor {self.time_factor}"
        return (
            f"GroupsSchedule({self.collective} of {len(self.groups)} groups on "
            f"{self.topology!r}, relay {self.relay}{factor})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The schedule-file dictionary (exact ratios as ``"p/q"`` strings)."""
        data: dict[str, Any] = {
            "format": "optcoll-schedule",
            "version": SCHEDULE_VERSION,
            "collective": self.collective,
            "topology": self.topology,
            **({} if self.topology_hash is None else {"topology_hash": self.topology_hash}),
            "relay": self.relay,
        }
        if self.time_factor is not None:
            data["time_factor"] = fraction_text(self.time_factor)
        data["groups"] = [
            {
                "members": list(s.compute_nodes),
                **({} if s.root is None else {"root": s.root}),
                "k": s.k,
                # every tree: a group's entry has no field for rotations
                "trees": replace(s, trees=tuple(s.trees), rotation=None).to_dict()["trees"],
            }
            for s in self.groups
        ]
        if self.stats:
            data["stats"] = dict(self.stats)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> GroupsSchedule:
        """Parse a groups schedule dictionary; structural problems raise :class:`ScheduleError`.

        Only the shape is checked (each group's trees as in a schedule file);
        whether it is valid is :func:`optcoll.verify.schedule.verify_groups_schedule`'s job.
        """
        if not isinstance(data, Mapping):
            raise ScheduleError(f"a schedule must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - _FIELDS)
        if unknown:
            raise ScheduleError(
                f"a groups schedule has unknown field(s) {', '.join(map(repr, unknown))}; "
                f"valid: {', '.join(sorted(_FIELDS))}"
            )
        for key in ("collective", "topology", "relay", "groups"):
            if key not in data:
                raise ScheduleError(f"a groups schedule is missing the required field {key!r}")
        if not isinstance(data["relay"], str):
            raise ScheduleError(f"field 'relay' must be a string, got {data['relay']!r}")
        entries = data["groups"]
        if not isinstance(entries, list) or not entries:
            raise ScheduleError("field 'groups' must be a non-empty list")
        header = {
            key: data[key] for key in ("format", "version", "collective", "topology") if key in data
        }
        schedules = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise ScheduleError(f"group {index} must be a mapping with {sorted(_GROUP_FIELDS)}")
            extra = sorted(set(entry) - _GROUP_FIELDS - {"root"})
            missing = sorted(_GROUP_FIELDS - set(entry))
            if extra or missing:
                raise ScheduleError(
                    f"group {index} has the fields members, k, trees (and root for "
                    "broadcast and reduce)"
                    + (f"; unknown: {', '.join(map(repr, extra))}" if extra else "")
                    + (f"; missing: {', '.join(map(repr, missing))}" if missing else "")
                )
            try:
                schedules.append(
                    Schedule.from_dict(
                        {
                            **header,
                            "compute_nodes": entry["members"],
                            "k": entry["k"],
                            "trees": entry["trees"],
                            **({"root": entry["root"]} if "root" in entry else {}),
                        }
                    )
                )
            except ScheduleError as err:
                raise ScheduleError(f"group {index}: {err}") from None
        factor = data.get("time_factor")
        if factor is not None and not isinstance(factor, (str, int)):
            raise ScheduleError(f"field 'time_factor' must be a ratio string, got {factor!r}")
        topology_hash = data.get("topology_hash")
        if topology_hash is not None and not isinstance(topology_hash, str):
            raise ScheduleError(f"field 'topology_hash' must be a string, got {topology_hash!r}")
        stats = data.get("stats", {})
        if not isinstance(stats, Mapping):
            raise ScheduleError(f"field 'stats' must be a mapping, got {stats!r}")
        return cls(
            collective=schedules[0].collective,
            topology=str(data["topology"]),
            relay=data["relay"],
            groups=tuple(schedules),
            time_factor=None if factor is None else _ratio(factor),
            topology_hash=topology_hash,
            stats=dict(stats),
        )


def _ratio(text: str | int) -> Fraction:
    try:
        value = parse_fraction(str(text))
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value <= 0:
        raise ScheduleError(f"field 'time_factor' must be a positive ratio 'p/q', got {text!r}")
    return value
