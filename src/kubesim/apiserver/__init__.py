"""The simulated kube-apiserver: everything between an HTTP request and the object store,
laid out as kube-apiserver's own packages are.

- `http/` - the HTTP face: routing, authentication and authorization, request decoding and
  response encoding, discovery, OpenAPI, tables, watch streams, and the pod streams (exec,
  attach, port-forward over WebSocket and SPDY).
- `core/` - API semantics independent of HTTP (`ApiCore`: create, update, patch, delete,
  watch, in kube-apiserver's order); the store and its persistence; deletion; the admission
  chain (webhooks, ValidatingAdmissionPolicies); field managers. Simulated controllers write
  through `ApiCore` too.
- `registry/` - one module per built-in type (`registry/<group>/<kind>.py`: strategy,
  validation, defaulting, table columns, schema), listed in `registry/catalogue.py`; the
  served types at run time (`Registry`), to which CRDs add theirs; the feature gates.
- `rbac.py`, `reviews.py` - RBAC authorization; TokenReview and the access reviews.
- `faults.py`, `faultfile.py` - seeded fault injection; `certs.py` - the cluster's CA, serving
  certificates, kubeconfig.

Imports point down: `http` uses `core` and `registry`; `core`'s `ApiCore` uses the
registry's strategies; registry modules use only the store, the request and hook
interfaces (`core/request.py`, `core/hooks.py`) and `kubesim.machinery`. Format-level code
shared with clients of other kinds (patching, schemas, CEL, selectors, Status errors) is in
`kubesim.machinery`.
"""
