"""What kube-apiserver does with a CRD's structural schema when a custom object is written.

The simulated API server calls, for every create and update of a custom resource:

    compiled = compile_schema(version["schema"]["openAPIV3Schema"])   # once per CRD version
    obj = prune(obj, compiled)                                         # drop unknown fields
    obj = apply_defaults(obj, compiled)                                # `default` values
    causes = validate(obj, compiled, old)                              # [] when valid

The behaviour and the error texts follow kube-apiserver (apiextensions-apiserver with its
kube-openapi validator and CEL), because clients and tests compare against a real cluster.
Where things live:

- `compiler.py` - `compile_schema` rejects schemas a real server rejects (not structural, bad
  regex, CEL that does not compile, `oldSelf` below a non-map list, `uniqueItems: true`, ...)
  with `SchemaError`, a ValueError carrying `Cause`s the server can put in its 422 response.
- `nodes.py` - the compiled form (`CompiledSchema`, its `_Node`s and CEL `_Rule`s),
  `SchemaError`, shared JSON helpers.
- `formats.py` - the string formats that are checked.
- `prune.py` - `prune` keeps only the fields the schema declares, except under
  `x-kubernetes-preserve-unknown-fields`, and always keeps `apiVersion`/`kind`/`metadata` of
  the object and of `x-kubernetes-embedded-resource` objects.
- `defaults.py` - `apply_defaults` applies `default`s top-down, only where the parent exists; a
  defaulted object then receives its own children's defaults. As in the real server, a `null`
  for a non-nullable field is replaced by the default, or dropped when there is none.
- `validate.py` - `validate` reports OpenAPI errors first, then `x-kubernetes-list-type`
  errors, then CEL rule errors. Like kube-apiserver, it skips the CEL rules entirely when an
  error that could make them expensive or meaningless (wrong type, unsupported enum value,
  missing required field, too long, too many) was found, and says so with a final `<nil>`
  cause. On update it implements validation ratcheting (on by default since Kubernetes 1.30):
  errors in a part of the object that is unchanged from the old object are not reported,
  except for transition rules, which are always evaluated where an old value exists.

Simplifications: string formats are checked loosely (date-time, date, duration, byte, uuid,
ipv4, ipv6, cidr, mac, hostname, email, hexcolor, rgbcolor, bsonobjectid) and others are
accepted; as in the real server `int32`/`int64`/`float`/`double` are not range-checked.
`pattern` uses Python's `re` (RE2 only when `re` rejects the pattern). Embedded resources get
their `apiVersion`/`kind` checked but not their metadata. CEL cost limits: `machinery/cel/cost.py`.
"""

from kubesim.machinery.schema.compiler import compile_schema
from kubesim.machinery.schema.defaults import apply_defaults
from kubesim.machinery.schema.nodes import CompiledSchema, SchemaError
from kubesim.machinery.schema.prune import prune
from kubesim.machinery.schema.validate import validate

__all__ = [
    "CompiledSchema",
    "SchemaError",
    "apply_defaults",
    "compile_schema",
    "prune",
    "validate",
]
