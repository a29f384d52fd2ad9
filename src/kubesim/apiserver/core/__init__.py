"""API semantics independent of HTTP: `apicore.py` and the store, deletion, admission and
field-manager modules it runs (see `kubesim.apiserver`)."""
