"""What the patch modules share: the errors a patch fails with (`PatchError`; an apply's
`ConflictError` of `FieldConflict`s), the JSON types, and the missing-value sentinel.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

JsonDict = dict[str, Any]


# A field path in the FieldsV1 vocabulary: one serialized path element per step, e.g.
# ("f:spec", "f:containers", 'k:{"name":"app"}', "f:image").
FieldPath = tuple[str, ...]


# --------------------------------------------------------------------------------------- errors


class PatchError(Exception):
    """A patch that cannot be applied (bad operation or path, failed `test`, bad directive, list
    item without its merge key...). The message says what is wrong; the server turns it into a
    400/422 `Status`."""


@dataclass(frozen=True)
class FieldConflict:
    """One field that an apply would change although another manager owns it."""

    path: str  # structured-merge-diff notation, e.g. `.spec.containers[name="app"].image`
    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str = ""

    def describe_manager(self) -> str:
        """The manager as the real API server prints it in conflict messages."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
            if self.time:
                text += f" at {self.time}"
        return text

    def message(self) -> str:
        return f"conflict with {self.describe_manager()}: {self.path}"


class ConflictError(Exception):
    """Server-side apply would change fields owned by other managers and `force` was not set.

    `conflicts` is `[(field_path, manager_name), ...]`; `details` keeps everything the real
    server puts into its 409 `Status` (see `message` and `status_causes`)."""

    def __init__(self, details: Sequence[FieldConflict]) -> None:
        self.details: list[FieldConflict] = list(details)
        self.conflicts: list[tuple[str, str]] = [(d.path, d.manager) for d in self.details]
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """Worded like kube-apiserver's, which kubectl and Helm show to users verbatim."""
        if len(self.details) == 1:
            return f"Apply failed with 1 conflict: {self.details[0].message()}"
        by_manager: dict[str, list[str]] = {}
        for d in self.details:
            by_manager.setdefault(d.describe_manager(), []).append(d.path)
        lines: list[str] = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}")
            lines.extend(f"- {p}" for p in by_manager[manager])
        return f"Apply failed with {len(self.details)} conflicts: " + "\n".join(lines)

    def status_causes(self) -> list[dict[str, str]]:
        """`Status.details.causes` entries as kube-apiserver builds them."""
        return [
            {"reason": "conflict", "message": d.message(), "field": d.path} for d in self.details
        ]


class _Missing:
    """Marks an absent value, as opposed to JSON `null`."""


MISSING: Final = _Missing()
