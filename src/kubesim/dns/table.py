"""The record table the DNS server answers from, updated incrementally per object.

Each source (a Service, an EndpointSlice, a Pod, the zone itself) contributes a set of
records; `replace` swaps one source's set for a new one and applies the difference, so an
event costs the records of that one object, never a rebuild. Records are counted (two
slices may both give a Service name the same address), and every name also counts for its
ancestors up to the zone: a name exists (NODATA rather than NXDOMAIN) when some record
lives at or below it, as DNS's empty non-terminals do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from kubesim.dns.records import CNAME, EXISTS, Record

__all__ = ["Lookup", "Outcome", "RecordTable"]


class Outcome(Enum):
    ANSWER = "answer"  # the name has records of the type asked
    NODATA = "nodata"  # the name exists, with no records of that type
    NXDOMAIN = "nxdomain"  # no such name in the zone
    NOT_AUTHORITATIVE = "refused"  # the name is in none of the table's zones


@dataclass(frozen=True)
class Lookup:
    outcome: Outcome
    zone: str = ""  # the zone the name is in (its SOA goes with negative answers)
    records: tuple[tuple[int, str], ...] = ()  # (type, rdata text)


@dataclass
class RecordTable:
    """Records of the zones given (absolute lower-case names, trailing dot)."""

    zones: tuple[str, ...]
    serial: int = 1  # bumped on every change: the zones' SOA serial
    _sources: dict[Hashable, frozenset[Record]] = field(default_factory=dict)
    _records: dict[str, Counter[tuple[int, str]]] = field(default_factory=dict)
    _names: Counter[str] = field(default_factory=Counter)

    def zone_of(self, name: str) -> str | None:
        """The most specific zone holding `name`, None if none does."""
        best: str | None = None
        for zone in self.zones:
            if (name == zone or name.endswith("." + zone)) and len(zone) > len(best or ""):
                best = zone
        return best

    def replace(self, source: Hashable, records: Iterable[Record]) -> bool:
        """Make `records` the whole contribution of `source` (empty: remove it); records
        outside the table's zones are dropped. True if anything changed."""
        new = frozenset(r for r in records if self.zone_of(r[0]) is not None)
        old = self._sources.get(source, frozenset())
        if new == old:
            return False
        for record in old - new:
            self._remove(record)
        for record in new - old:
            self._add(record)
        if new:
            self._sources[source] = new
        else:
            self._sources.pop(source, None)
        self.serial = self.serial % 0xFFFFFFFF + 1
        return True

    def lookup(self, name: str, rdtype: int, any_type: bool = False) -> Lookup:
        """What the zone says about `name` (lower case, absolute) and type `rdtype`, or every
        type with `any_type`. A CNAME answers a question of any other type."""
        zone = self.zone_of(name)
        if zone is None:
            return Lookup(Outcome.NOT_AUTHORITATIVE)
        held = self._records.get(name)
        if held is not None:
            found = tuple(sorted(k for k in held if k[0] != EXISTS))
            if not any_type:
                wanted = tuple(k for k in found if k[0] == rdtype)
                found = wanted or tuple(k for k in found if k[0] == CNAME)
            if found:
                return Lookup(Outcome.ANSWER, zone, found)
        if name == zone or self._names[name] > 0:
            return Lookup(Outcome.NODATA, zone)
        return Lookup(Outcome.NXDOMAIN, zone)

    def __len__(self) -> int:
        return sum(c.total() for c in self._records.values())

    def _ancestors(self, name: str) -> Iterable[str]:
        """`name` and its parents below its zone (every name here is in one of them)."""
        while name and name not in self.zones:
            yield name
            name = name.partition(".")[2]

    def _add(self, record: Record) -> None:
        name, rdtype, rdata = record
        self._records.setdefault(name, Counter())[(rdtype, rdata)] += 1
        for n in self._ancestors(name):
            self._names[n] += 1

    def _remove(self, record: Record) -> None:
        name, rdtype, rdata = record
        held = self._records[name]
        held[(rdtype, rdata)] -= 1
        if held[(rdtype, rdata)] <= 0:
            del held[(rdtype, rdata)]
            if not held:
                del self._records[name]
        for n in self._ancestors(name):
            self._names[n] -= 1
            if self._names[n] <= 0:
                del self._names[n]
