"""Which kubeconfig context and namespace a user command uses: exactly kubectl's answer.

client-go's loading rules (`clientcmd.ClientConfigLoadingRules`), which kubectl follows:

* `--kubeconfig PATH` is the only file read; otherwise `$KUBECONFIG` is a list of files
  (`:`-separated, `;` on Windows; empty entries, duplicates and missing files skipped), and
  without it `~/.kube/config`;
* the files are merged with *first wins*: the first file that sets `current-context` gives
  it, and a context, cluster or user defined in several files is the first file's;
* the context is `--context`, else that merged `current-context`; the namespace is `-n`,
  else the context's `namespace`, else `default`. With no kubeconfig at all in a pod, the
  pod's own namespace (`$POD_NAMESPACE`, then the ServiceAccount's namespace file).

kubernetes_asyncio merges the same files but lets the *last* `current-context` win, so the
connection is made with the context resolved here, passed explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

__all__ = [
    "DEFAULT_KUBECONFIG",
    "SERVICEACCOUNT_NAMESPACE_FILE",
    "Entry",
    "Kubeconfig",
    "kubeconfig_files",
    "kubeconfig_namespace",
    "load_merged",
]

DEFAULT_KUBECONFIG: Final = "~/.kube/config"
SERVICEACCOUNT_NAMESPACE_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


@dataclass(frozen=True)
class Entry:
    """A cluster or user of the merged view, with the file it came from (relative paths in
    it are relative to that file's directory, as client-go resolves them)."""

    value: Mapping[str, Any]
    source: str


@dataclass
class Kubeconfig:
    """The merged view of the files kubectl would read."""

    files: list[str] = field(default_factory=list)
    current_context: str = ""
    contexts: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    clusters: dict[str, Entry] = field(default_factory=dict)
    users: dict[str, Entry] = field(default_factory=dict)

    def context_name(self, override: str | None = None) -> str:
        return override or self.current_context

    def namespace(self, context: str | None = None) -> str:
        """The namespace of `context` (else the current one), else `default`."""
        ctx = self.contexts.get(self.context_name(context)) or {}
        return str(ctx.get("namespace") or "") or "default"


def kubeconfig_files(
    kubeconfig: str | None = None, env: Mapping[str, str] | None = None
) -> list[str]:
    """The files kubectl reads, in precedence order (only existing ones, but an explicit
    `--kubeconfig` is returned even when missing: connecting then reports it)."""
    environ = os.environ if env is None else env
    if kubeconfig:
        return [os.path.expanduser(kubeconfig)]
    listed = environ.get("KUBECONFIG") or ""
    candidates = listed.split(os.pathsep) if listed else [DEFAULT_KUBECONFIG]
    out: list[str] = []
    for path in candidates:
        full = os.path.expanduser(path) if path else ""
        if full and full not in out and os.path.isfile(full):
            out.append(full)
    return out


def _load(path: str) -> Mapping[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it
    try:
        with open(path) as fh:
            data = yaml.load(fh, Loader=loader)
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, Mapping) else {}


def load_merged(kubeconfig: str | None = None, env: Mapping[str, str] | None = None) -> Kubeconfig:
    """Merge the kubeconfig files with client-go's first-wins rules."""
    merged = Kubeconfig(files=kubeconfig_files(kubeconfig, env))
    for path in merged.files:
        cfg = _load(path)
        if not merged.current_context and cfg.get("current-context"):
            merged.current_context = str(cfg["current-context"])
        for entry in cfg.get("contexts") or []:
            if not isinstance(entry, Mapping) or not entry.get("name"):
                continue
            name = str(entry["name"])
            if name not in merged.contexts:
                ctx = entry.get("context")
                merged.contexts[name] = ctx if isinstance(ctx, Mapping) else {}
        _merge_entries(merged.clusters, cfg.get("clusters"), "cluster", path)
        _merge_entries(merged.users, cfg.get("users"), "user", path)
    return merged


def _merge_entries(into: dict[str, Entry], entries: Any, key: str, source: str) -> None:
    """The named `clusters` or `users` of one file, the first file's definition winning."""
    for entry in entries or []:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        value = entry.get(key)
        if name not in into:
            into[name] = Entry(value if isinstance(value, Mapping) else {}, source)


def _in_cluster_namespace(env: Mapping[str, str]) -> str | None:
    if not env.get("KUBERNETES_SERVICE_HOST"):
        return None
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        with open(SERVICEACCOUNT_NAMESPACE_FILE) as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def kubeconfig_namespace(
    kubeconfig: str | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The namespace kubectl uses without `-n`: the (given or current) context's, else
    `default` (in a pod without a kubeconfig: the pod's namespace)."""
    environ = os.environ if env is None else env
    merged = load_merged(kubeconfig, environ)
    if not merged.files:
        return _in_cluster_namespace(environ) or "default"
    return merged.namespace(context)
