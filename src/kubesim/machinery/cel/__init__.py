"""CEL for CRD `x-kubernetes-validations`: cel-python plus what kube-apiserver adds on top of CEL.

kube-apiserver evaluates validation rules with cel-go and a set of Kubernetes extension
libraries. cel-python (`celpy`) parses and evaluates standard CEL, but it lacks those libraries
and differs from cel-go in a few semantics that CRD rules depend on. This package closes the gap
so that CRDs written for a real cluster (upstream JobSet's among them) behave the same here.

Where things live:

- `compiler.py` - `compile_expression` (parse with celpy, static check for unknown names, as
  cel-go's checker would at CRD creation) and the `CelProgram` it returns.
- `evaluator.py` - the interpreter for celpy's parse trees: celpy's own evaluator was too slow
  for a server that validates every write; it also gives cel-go's `has()` (`has(a.b.c)` fails
  when `a.b` does not exist) and error-absorbing `&&`, `||`, `all()`, `exists()`.
- `functions.py` - the function table, merged from each library's `FUNCTIONS`.
- `variables.py` - `LazyVariables`: variables given as JSON, converted to CEL values only
  when an expression reads them (a webhook's matchCondition need not convert the pod).
- `cost.py` - the runtime cost of an evaluation and kube-apiserver's limits: the per-call
  limit (an evaluation past it is cancelled) and the budget all the rules of one request share.
- `values.py` - `CelError`, error values, type tests, namespace markers (`sets`, `optional`, ...).
- `standard.py` - cel-go's semantics where celpy's differ: heterogeneous equality (`1 == 1.0`),
  cross-type numeric comparisons, `+`, `in`, `[]`, conversions; `SetList` / `MapList` (lists
  with `x-kubernetes-list-type: set` / `map`: order-free `==`, `+` a union) and `Optional`.
- The extension libraries: `strings.py` (cel-go's string extensions, `format`, `strings.quote`),
  `lists.py` (the Kubernetes list library, cel-go's list extensions, `sets.*`), `regex.py`
  (`find`, `findAll`, `re2_compile`), `mathlib.py` (`math.*`), `optionals.py` (`optional.*`,
  `hasValue`, `value`, `orValue`; needed for `optionalOldSelf`), `formats.py` (named formats
  such as `format.dns1123Label().validate(s)`, and `base64`), `quantity.py` and `network.py`
  (smaller versions of the quantity, URL and IP/CIDR libraries).

Not supported: the optional-field syntax `a.?b` / `a[?b]` (celpy's grammar cannot parse it),
static type checking beyond unknown names (a rule that is not a bool, or mixes types, fails at
evaluation instead of at CRD creation), static cost estimation (the estimated-cost check at
CRD and policy creation), `cel.bind`, and the semver, authorizer and jsonpatch libraries.
"""

from kubesim.machinery.cel.compiler import CelProgram, compile_expression
from kubesim.machinery.cel.cost import (
    COST_LIMIT_MESSAGE,
    PER_CALL_LIMIT,
    RUNTIME_COST_BUDGET,
    CostTracker,
)
from kubesim.machinery.cel.regex import re2_compile
from kubesim.machinery.cel.standard import MapList, Optional, SetList, equals
from kubesim.machinery.cel.values import CelError
from kubesim.machinery.cel.variables import LazyVariables

__all__ = [
    "COST_LIMIT_MESSAGE",
    "PER_CALL_LIMIT",
    "RUNTIME_COST_BUDGET",
    "CelError",
    "CelProgram",
    "CostTracker",
    "LazyVariables",
    "MapList",
    "Optional",
    "SetList",
    "compile_expression",
    "equals",
    "re2_compile",
]
