"""Label and field selectors, parsed the way kube-apiserver parses them from query strings.

Clients nobody here wrote (kubectl, client-go informers, kubernetes_asyncio) send selectors as
strings and show the server's error message verbatim, so the grammar and the messages follow
`k8s.io/apimachinery/pkg/labels` and `pkg/fields`: the same tokens, the same operators
(`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`, and the numeric `>`/`<`), the same label key and
value validation and the same "unable to parse requirement: ..." wording.

Selectors are parsed once per request or watch and then matched against many objects, so parsing
compiles each one into flat tuples and `matches()` is a tight loop with no allocation.

- `labels.py` - `LabelSelector` and its requirements, label key and value validation.
- `fields.py` - `FieldSelector`, and the selectable fields of each resource.
"""

from kubesim.machinery.selectors.fields import (
    FieldSelector,
    FieldSpec,
    SelectableFields,
    field_selectors_for,
)
from kubesim.machinery.selectors.labels import (
    LabelSelector,
    Requirement,
    validate_label_key,
    validate_label_value,
)

__all__ = [
    "FieldSelector",
    "FieldSpec",
    "LabelSelector",
    "Requirement",
    "SelectableFields",
    "field_selectors_for",
    "validate_label_key",
    "validate_label_value",
]
