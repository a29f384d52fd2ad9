"""The HTTP face of the simulated API server (`server.py` routes; see `kubesim.apiserver`)."""
