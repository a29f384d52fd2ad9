"""Small Kubernetes formats (and process helpers) shared by the controller (`jobset`) and the
simulator (`kubesim`).

Both packages need the same answers for the same inputs - a quantity such as `1Gi`, a
self-signed serving certificate - and neither may import the other, so these live here:

- `quantity`: resource quantities (`500m`, `1Gi`, `2e3`) parsed as apimachinery does;
- `tls`: certificate authorities, serving certificates and the TLS contexts built on them;
- `gcfreeze`: short garbage-collector pauses for a long-running process (`jobset controller`,
  `jobset sim`): the survivors of each full collection are frozen, reclaimed rarely;
- `aio`: how every component of both sides stops its background tasks;
- `eventspam`: client-go's per-object event spam filter, in front of both sides' events;
- `gofmt`: Go's `%q`, for messages both sides word as the Go components do.
"""
