"""`Registry`: the types the simulated API server serves, looked up by (group, version,
plural) or kind. It starts from the built-in types of the catalogue (`catalogue.py`) that the
feature gates turn on; CRDs add and remove types at run time (`apiextensions/`).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesim.apiserver.registry.resourcetype import ResourceType


class Registry:
    """The served types, looked up by (group, version, plural) or kind; CRDs come and go."""

    def __init__(self, types: Iterable[ResourceType]) -> None:
        """Serve `types` (the catalogue's `served_types()`), CRDs' added later."""
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        # Storage key -> (group, version, plural) -> type: every type served from one store.
        self._by_key: dict[tuple[str, str], dict[tuple[str, str, str], ResourceType]] = {}
        for rt in types:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        gvr = (rt.group, rt.version, rt.plural)
        replaced = self._by_gvr.get(gvr)
        if replaced is not None:
            self._by_key.get(replaced.key, {}).pop(gvr, None)
        self._by_gvr[gvr] = rt
        self._by_gvk[(rt.group, rt.version, rt.kind)] = rt
        self._by_key.setdefault(rt.key, {})[gvr] = rt

    def remove_group_resource(self, group: str, plural: str) -> list[ResourceType]:
        gone = [rt for rt in self._by_gvr.values() if rt.group == group and rt.plural == plural]
        for rt in gone:
            self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
            self._by_gvk.pop((rt.group, rt.version, rt.kind), None)
            self._by_key.get(rt.key, {}).pop((rt.group, rt.version, rt.plural), None)
        return gone

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        return self._by_gvk.get((group, version, kind))

    def sharing_storage(self, key: tuple[str, str]) -> list[ResourceType]:
        """The served types stored under `key` (`ResourceType.key`): a dict lookup, for
        admission asks on every request a webhook's rules do not match as such."""
        return list(self._by_key.get(key, {}).values())

    def all(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name → served versions, preferred (first declared) first; core group is ''."""
        out: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version]
