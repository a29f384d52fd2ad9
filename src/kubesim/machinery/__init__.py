"""The API machinery of the simulated cluster: pure code about Kubernetes objects and requests.

Nothing here does I/O or knows about HTTP; it is the Python counterpart of
`k8s.io/apimachinery` and `apiextensions-apiserver`'s schema code:

- `errors.py` - `ApiError` and `Cause`, rendered as `Status`; `field.py` - the field-error
  messages (`Invalid value: ...`, `Required value`) every validator words the same way.
- `selectors/` - label (`labels.py`) and field (`fields.py`) selectors, parsed and matched.
- `patch` - JSON patch, merge patch, strategic merge patch, server-side apply and managedFields.
- `schema` - CRD structural schemas: compile, prune, default, validate.
- `cel` - CEL for `x-kubernetes-validations`, with Kubernetes' extension libraries.
"""
