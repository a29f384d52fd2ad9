"""The simulated kube-apiserver: everything between an HTTP request and the object store.

Where things live:

- `server.py` - HTTP: routing, authentication, content types, subresources; `watchstream.py`
  writes a watch's event stream (initial events, bookmarks, timeouts, injected cuts).
- `apicore.py` - API semantics independent of HTTP (create/update/patch/delete, admission,
  resourceVersion conflicts, finalizers); simulated controllers write through it too.
  `deletion.py` is what a DELETE does to an object (preconditions, propagation, grace).
- `store.py`, `persistence.py` - objects with one global resourceVersion and watch fan-out;
  `--data-dir` snapshot plus journal.
- `resources.py` - the catalogue of served types (`Registry`, `ResourceType`); CRDs add to it
  through `crds.py`.
- `strategies.py` - per-type behaviour of built-ins (defaults on create, immutable fields).
- `discovery.py`, `openapi.py`, `tables.py`, `protobuf.py` - discovery documents, OpenAPI
  v2/v3, `kubectl get` tables, protobuf request bodies.
- `admission.py` - mutating and validating admission webhooks over HTTPS; `webhookconfig.py`
  parses their configurations and matches requests against their rules.
- `rbac.py`, `reviews.py` - RBAC authorization; TokenReview and the access reviews.
- `faults.py` - seeded fault injection; `certs.py` - the cluster's CA, serving certs, kubeconfig.

Format-level code shared with clients of other kinds (patching, schemas, CEL, selectors,
Status errors) is in `kubesim.machinery`.
"""
