"""Admission webhooks: the TLS server, certificate management, JobSet defaulting and
validation, and the Pod webhooks of exclusive placement.

`setup_webhooks(manager, WebhookOptions(...))` wires them into a controller process;
`install_webhooks(client)` registers them with a cluster. See docs/placement.md.
"""

from jobset.webhooks.certcontroller import CertOptions, CertRotator
from jobset.webhooks.server import ServingCert, WebhookServer
from jobset.webhooks.setup import WebhookOptions, Webhooks, install_webhooks, setup_webhooks

__all__ = [
    "CertOptions",
    "CertRotator",
    "ServingCert",
    "WebhookOptions",
    "WebhookServer",
    "Webhooks",
    "install_webhooks",
    "setup_webhooks",
]
