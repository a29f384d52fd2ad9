"""The chart, rendered by Helm's engine: lint, defaults, every option, and bad values."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest
import yaml

import jobset
from jobset.api.constants import DEFAULT_FEATURE_GATES
from jobset.cli import build_parser
from tests.integration.deploy.chart import by_kind, notes, objects, one
from tests.integration.deploy.helpers import CHART, CONFIG, CRD_FILE

pytestmark = [pytest.mark.helm]

DEPLOYMENT = "jobset-controller-manager"


def _container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    pod = one(objs, "Deployment", DEPLOYMENT)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return container  # type: ignore[no-any-return]


def _pod(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return one(objs, "Deployment", DEPLOYMENT)["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def test_lint_is_clean() -> None:
    for values in (None, {"certificate": {"mode": "cert-manager"}}):
        report = helm.lint(str(CHART), values, strict=True)
        assert report["errors"] == [], report
        assert [m for m in report["messages"] if m["severity"] >= 2] == [], report


def test_defaults_render_a_complete_hardened_install() -> None:
    objs = objects()
    kinds = sorted({(o["kind"], o["metadata"]["name"]) for o in objs})
    assert kinds == [
        ("ClusterRole", "jobset-editor-role"),
        ("ClusterRole", "jobset-manager-role"),
        ("ClusterRole", "jobset-metrics-auth-role"),
        ("ClusterRole", "jobset-metrics-reader"),
        ("ClusterRole", "jobset-viewer-role"),
        ("ClusterRoleBinding", "jobset-manager-rolebinding"),
        ("ClusterRoleBinding", "jobset-metrics-auth-rolebinding"),
        ("Deployment", DEPLOYMENT),
        ("MutatingWebhookConfiguration", "jobset-mutating-webhook-configuration"),
        ("NetworkPolicy", DEPLOYMENT),
        ("Role", "jobset-leader-election-role"),
        ("Role", "jobset-webhook-cert-role"),
        ("RoleBinding", "jobset-leader-election-rolebinding"),
        ("RoleBinding", "jobset-webhook-cert-rolebinding"),
        ("Secret", "jobset-webhook-server-cert"),
        ("Service", "jobset-controller-manager-metrics-service"),
        ("Service", "jobset-webhook-service"),
        ("ServiceAccount", DEPLOYMENT),
        ("ValidatingWebhookConfiguration", "jobset-validating-webhook-configuration"),
    ]
    for o in objs:
        if o["kind"] not in ("ClusterRole", "ClusterRoleBinding") and "Webhook" not in o["kind"]:
            assert o["metadata"]["namespace"] == "jobset-system", o["metadata"]
        assert o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    pod = _pod(objs)
    c = _container(objs)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert c["resources"]["requests"] and c["resources"]["limits"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"metrics": 8080, "health": 8081, "webhook-server": 9443}
    assert pod["terminationGracePeriodSeconds"] == 45
    assert "--graceful-shutdown-timeout=30" in c["args"]
    assert c["image"] == f"ghcr.io/jobset-py/jobset:{jobset.__version__}"  # the appVersion
    assert c["command"] == ["jobset", "controller"]
    assert "--leader-elect" in c["args"]
    # Every flag is one `jobset controller` accepts (the CLI contract).
    build_parser().parse_args(["controller", *c["args"]])
    # The webhook Service reaches the controller's pods on the webhook port.
    webhook_svc = one(objs, "Service", "jobset-webhook-service")
    pod_labels = one(objs, "Deployment", DEPLOYMENT)["spec"]["template"]["metadata"]["labels"]
    assert webhook_svc["spec"]["selector"].items() <= pod_labels.items()
    assert webhook_svc["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 9443}]
    metrics_svc = one(objs, "Service", "jobset-controller-manager-metrics-service")
    assert metrics_svc["spec"]["selector"].items() <= pod_labels.items()
    assert metrics_svc["spec"]["ports"][0]["targetPort"] == "metrics"


def test_crds_are_the_generated_crd() -> None:
    chart = helm.Chart.load(str(CHART))
    crds = chart.crds
    assert [c["name"] for c in crds] == ["crds/jobset.x-k8s.io_jobsets.yaml"]
    assert (
        CHART / "crds" / "jobset.x-k8s.io_jobsets.yaml"
    ).read_bytes() == CRD_FILE.read_bytes(), (
        "charts/jobset/crds is stale: cp config/crd/bases/jobset.x-k8s.io_jobsets.yaml "
        "charts/jobset/crds/"
    )


def test_webhook_configurations_match_config_webhook() -> None:
    """The chart's webhooks are config/webhook's (generated from the webhook package)."""
    rendered = objects()
    generated = [
        d
        for path in sorted((CONFIG / "webhook").glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for d in yaml.safe_load_all(path.read_text())
        if d
    ]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (want,) = by_kind(generated, kind).values()
        got = one(rendered, kind, want["metadata"]["name"])
        assert got["webhooks"] == want["webhooks"]
    want_svc = by_kind(generated, "Service")["jobset-webhook-service"]
    got_svc = one(rendered, "Service", "jobset-webhook-service")
    assert got_svc["spec"] == want_svc["spec"]
    assert set(by_kind(generated, "Secret")) <= set(by_kind(rendered, "Secret"))


def test_controller_options() -> None:
    values = {
        "image": {"repository": "registry.example/jobset", "tag": "v9", "pullPolicy": "Always",
                  "pullSecrets": [{"name": "regcred"}]},
        "controller": {
            "replicas": 3,
            "concurrency": 20,
            "qps": 300,
            "burst": 600,
            "logFormat": "console",
            "logLevel": "DEBUG",
            "featureGates": {"RestartJob": True, "ElasticJobSet": False},
            "perJobSetMetrics": True,
            "gracefulShutdownTimeout": 60,
            "extraArgs": ["--namespace=team-a"],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
            "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ctl",
                             "effect": "NoSchedule"}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                 "labelSelector": {"matchLabels": {"control-plane": "controller-manager"}}}}]}},
            "priorityClassName": "system-cluster-critical",
            "podAnnotations": {"example.com/a": "b"},
            "env": [{"name": "EXTRA", "value": "1"}],
        },
        "commonLabels": {"team": "ml-platform"},
    }  # fmt: skip
    objs = objects(values)
    deploy = one(objs, "Deployment", DEPLOYMENT)
    pod, c = _pod(objs), _container(objs)
    assert deploy["spec"]["replicas"] == 3
    assert c["image"] == "registry.example/jobset:v9" and c["imagePullPolicy"] == "Always"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    for flag in (
        "--concurrency=20",
        "--qps=300",
        "--burst=600",
        "--log-format=console",
        "--log-level=DEBUG",
        "--feature-gates=ElasticJobSet=false,RestartJob=true",
        "--per-jobset-metrics",
        "--graceful-shutdown-timeout=60",
        "--namespace=team-a",
    ):
        assert flag in c["args"], (flag, c["args"])
    args = build_parser().parse_args(["controller", *c["args"]])
    assert (args.concurrency, args.qps, args.burst, args.namespace) == (20, 300.0, 600, "team-a")
    assert pod["terminationGracePeriodSeconds"] == 75
    # Helm merges maps with the defaults: the default cpu limit stays unless set to null.
    assert c["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"},
                              "limits": {"cpu": "2", "memory": "4Gi"}}  # fmt: skip
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert pod["tolerations"][0]["key"] == "dedicated"
    assert "podAntiAffinity" in pod["affinity"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert deploy["spec"]["template"]["metadata"]["annotations"]["example.com/a"] == "b"
    assert {"name": "EXTRA", "value": "1"} in c["env"]
    assert all(o["metadata"]["labels"]["team"] == "ml-platform" for o in objs)


def test_upstream_pod_options() -> None:
    """The pod values upstream's chart has (envFrom, volumes, volumeMounts, the Deployment's
    annotations, hostNetwork) reach the Deployment; by default none of them is set."""
    default = one(objects(), "Deployment", DEPLOYMENT)
    pod, c = default["spec"]["template"]["spec"], _container(objects())
    assert "annotations" not in default["metadata"]
    assert "hostNetwork" not in pod and "dnsPolicy" not in pod and "envFrom" not in c
    assert [v["name"] for v in pod["volumes"]] == ["tmp", "cert"]
    values = {
        "controller": {
            "annotations": {"reloader.example/auto": "true"},
            "envFrom": [{"secretRef": {"name": "proxy-env"}}, {"configMapRef": {"name": "tune"}}],
            "volumes": [{"name": "ca-bundle", "configMap": {"name": "corporate-ca"}}],
            "volumeMounts": [{"name": "ca-bundle", "mountPath": "/etc/ssl/corp", "readOnly": True}],
            "hostNetwork": True,
        },
    }
    objs = objects(values)
    deploy = one(objs, "Deployment", DEPLOYMENT)
    pod, c = _pod(objs), _container(objs)
    assert deploy["metadata"]["annotations"] == {"reloader.example/auto": "true"}
    assert "reloader.example/auto" not in deploy["spec"]["template"]["metadata"]["annotations"]
    assert c["envFrom"] == values["controller"]["envFrom"]
    # The user's volume comes after the chart's own, which stay.
    assert [v["name"] for v in pod["volumes"]] == ["tmp", "cert", "ca-bundle"]
    assert pod["volumes"][-1] == {"name": "ca-bundle", "configMap": {"name": "corporate-ca"}}
    assert [m["mountPath"] for m in c["volumeMounts"]] == [
        "/tmp", "/tmp/k8s-webhook-server/serving-certs", "/etc/ssl/corp"]  # fmt: skip
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    # The read-only root filesystem is not the user's to change through these.
    assert c["securityContext"]["readOnlyRootFilesystem"] is True


def test_webhook_client_auth_from_cluster() -> None:
    """webhook.clientAuth.fromCluster: the flag, and read access to the API server's
    published client CA through the Role every cluster has for it."""
    assert "--webhook-client-ca-from-cluster" not in _args(objects())
    objs = objects({"webhook": {"clientAuth": {"fromCluster": True}}})
    assert "--webhook-client-ca-from-cluster" in _args(objs)
    binding = one(objs, "RoleBinding", "jobset-extension-apiserver-authentication-reader")
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": DEPLOYMENT, "namespace": "jobset-system"}
    ]


def _args(objs: list[dict[str, Any]]) -> list[str]:
    deploy = one(objs, "Deployment", DEPLOYMENT)
    return list(deploy["spec"]["template"]["spec"]["containers"][0]["args"])


def test_digest_wins_over_tag() -> None:
    digest = "sha256:" + "a" * 64
    c = _container(objects({"image": {"tag": "v1", "digest": digest}}))
    assert c["image"] == f"ghcr.io/jobset-py/jobset@{digest}"


def test_leader_election_off_drops_flag_and_role() -> None:
    objs = objects({"controller": {"leaderElection": {"enabled": False}}})
    assert "--leader-elect" not in _container(objs)["args"]
    assert "jobset-leader-election-role" not in by_kind(objs, "Role")
    assert "jobset-leader-election-rolebinding" not in by_kind(objs, "RoleBinding")


def test_leader_election_timings() -> None:
    objs = objects({"controller": {"leaderElection": {"leaseDuration": 30, "renewDeadline": 20,
                                                      "retryPeriod": 4}}})  # fmt: skip
    args = build_parser().parse_args(["controller", *_container(objs)["args"]])
    assert args.leader_elect and args.leader_election_id == "jobset-controller-leader"
    assert (
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    ) == (30.0, 20.0, 4.0)
    lease_role = one(objs, "Role", "jobset-leader-election-role")
    assert ["jobset-controller-leader"] in [r.get("resourceNames") for r in lease_role["rules"]]


def test_cert_manager_mode() -> None:
    objs = objects({"certificate": {"mode": "cert-manager"}})
    cert = one(objs, "Certificate", "jobset-serving-cert")
    assert cert["spec"]["secretName"] == "jobset-webhook-server-cert"
    assert cert["spec"]["dnsNames"] == [
        "jobset-webhook-service.jobset-system.svc",
        "jobset-webhook-service.jobset-system.svc.cluster.local",
    ]
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": "jobset-selfsigned-issuer"}
    assert one(objs, "Issuer", "jobset-selfsigned-issuer")["spec"] == {"selfSigned": {}}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (conf,) = by_kind(objs, kind).values()
        assert conf["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "jobset-system/jobset-serving-cert"
        }
    # cert-manager writes the Secret and injects the CA: the controller needs neither right.
    assert "Secret" not in {o["kind"] for o in objs}
    assert "jobset-webhook-cert-role" not in by_kind(objs, "Role")
    rules = one(objs, "ClusterRole", "jobset-manager-role")["rules"]
    assert not [r for r in rules if "admissionregistration.k8s.io" in r["apiGroups"]]
    args = _container(objs)["args"]
    assert "--cert-management=files" in args
    assert "--cert-dir=/tmp/k8s-webhook-server/serving-certs" in args
    mounts = {m["name"]: m["mountPath"] for m in _container(objs)["volumeMounts"]}
    assert mounts["cert"] == "/tmp/k8s-webhook-server/serving-certs"
    pod = one(objs, "Deployment", "jobset-controller-manager")["spec"]["template"]["spec"]
    cert = next(v for v in pod["volumes"] if v["name"] == "cert")["secret"]
    assert {i["key"] for i in cert["items"]} == {"tls.crt", "tls.key"}  # never ca.key
    text = notes({"certificate": {"mode": "cert-manager"}})
    assert "cert-manager issues the webhook certificate" in text
    assert "get certificate jobset-metrics-cert" in text


def test_cert_manager_mode_issues_the_metrics_certificate() -> None:
    """Secure metrics with cert-manager: a second Certificate from the same Issuer, for the
    metrics Service's names, whose Secret the pod mounts for --metrics-cert-dir (not
    optional: the metrics server cannot start without it)."""
    objs = objects({"certificate": {"mode": "cert-manager"}})
    webhook = one(objs, "Certificate", "jobset-serving-cert")["spec"]
    cert = one(objs, "Certificate", "jobset-metrics-cert")["spec"]
    svc = one(objs, "Service", "jobset-controller-manager-metrics-service")["metadata"]
    assert cert["dnsNames"] == [
        f"{svc['name']}.{svc['namespace']}.svc",
        f"{svc['name']}.{svc['namespace']}.svc.cluster.local",
    ]
    assert cert["secretName"] == "jobset-metrics-server-cert"
    same = ("issuerRef", "duration", "renewBefore", "privateKey")
    assert {k: cert[k] for k in same} == {k: webhook[k] for k in same}
    args = build_parser().parse_args(["controller", *_container(objs)["args"]])
    assert args.metrics_secure and args.cert_management == "files"
    mounts = {m["name"]: m for m in _container(objs)["volumeMounts"]}
    assert args.metrics_cert_dir == mounts["metrics-cert"]["mountPath"]
    assert mounts["metrics-cert"]["readOnly"] is True
    volume = next(v for v in _pod(objs)["volumes"] if v["name"] == "metrics-cert")["secret"]
    assert volume["secretName"] == cert["secretName"] and "optional" not in volume
    # A ClusterIssuer of the user's issues it too.
    corp = {"kind": "ClusterIssuer", "name": "corp-ca"}
    issued = objects({"certificate": {"mode": "cert-manager", "certManager": {"issuerRef": corp}}})
    assert one(issued, "Certificate", "jobset-metrics-cert")["spec"]["issuerRef"] == corp
    # The user's metrics.certSecret wins: no Certificate of the chart's, theirs is mounted.
    own = objects({"certificate": {"mode": "cert-manager"}, "metrics": {"certSecret": "mine"}})
    assert "jobset-metrics-cert" not in by_kind(own, "Certificate")
    volume = next(v for v in _pod(own)["volumes"] if v["name"] == "metrics-cert")["secret"]
    assert volume["secretName"] == "mine"
    # Plain metrics, or the internal management: no metrics Certificate, no --metrics-cert-dir.
    for values in (
        {"certificate": {"mode": "cert-manager"}, "metrics": {"secure": False}},
        {},
    ):
        rendered = objects(values)
        assert "jobset-metrics-cert" not in by_kind(rendered, "Certificate")
        assert not [a for a in _container(rendered)["args"] if "--metrics-cert-dir" in a]
        assert "metrics-cert" not in {v["name"] for v in _pod(rendered)["volumes"]}


def test_cert_manager_with_a_cluster_issuer() -> None:
    objs = objects(
        {"certificate": {"mode": "cert-manager",
                         "certManager": {"issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}}}}
    )  # fmt: skip
    assert one(objs, "Certificate", "jobset-serving-cert")["spec"]["issuerRef"] == {
        "kind": "ClusterIssuer",
        "name": "corp-ca",
    }
    assert "Issuer" not in {o["kind"] for o in objs}


def test_monitoring_objects() -> None:
    objs = objects(
        {
            "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "kps"},
                                           "interval": "15s"}},
            "prometheusRule": {"enabled": True, "labels": {"release": "kps"}},
            "grafana": {"dashboard": {"enabled": True, "namespace": "monitoring",
                                      "annotations": {"grafana_folder": "JobSet"}}},
        }
    )  # fmt: skip
    sm = one(objs, "ServiceMonitor", "jobset-controller-manager")
    assert sm["metadata"]["labels"]["release"] == "kps"
    svc = one(objs, "Service", "jobset-controller-manager-metrics-service")
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["port"] == svc["spec"]["ports"][0]["name"] and endpoint["interval"] == "15s"
    assert {"action": "replace", "targetLabel": "job", "replacement": "jobset-controller"} in (
        endpoint["relabelings"]
    )
    rule = one(objs, "PrometheusRule", "jobset-controller-alerts")
    assert rule["metadata"]["labels"]["release"] == "kps"
    rules_file = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())
    assert rule["spec"] == rules_file
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {
        "JobSetControllerDown",
        "JobSetControllerNoLeader",
        "JobSetReconcileErrorsHigh",
        "JobSetWorkqueueBackingUp",
        "JobSetFailuresSpiking",
        "JobSetControllerEventLoopLagHigh",
    } <= alerts
    cm = one(objs, "ConfigMap", "jobset-grafana-dashboard")
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "JobSet"}
    shipped = (CHART / "files" / "dashboards" / "jobset-controller.json").read_text()
    assert yaml.safe_load(cm["data"]["jobset-controller.json"]) == yaml.safe_load(shipped)


def test_monitoring_is_off_by_default_and_metrics_service_optional() -> None:
    kinds = {o["kind"] for o in objects()}
    assert not kinds & {"ServiceMonitor", "PrometheusRule", "ConfigMap", "PodDisruptionBudget"}
    objs = objects({"metrics": {"service": {"enabled": False}}})
    assert "jobset-controller-manager-metrics-service" not in by_kind(objs, "Service")
    with pytest.raises(helm.HelmError, match=r"needs metrics\.service\.enabled"):
        objects({"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}})


def test_pod_disruption_budget() -> None:
    pdb = one(
        objects({"podDisruptionBudget": {"enabled": True}}), "PodDisruptionBudget", DEPLOYMENT
    )
    assert pdb["spec"] == {
        "minAvailable": 1,
        "selector": {"matchLabels": {"control-plane": "controller-manager"}},
    }
    pdb = one(
        objects({"controller": {"replicas": 3},
                 "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1}}),
        "PodDisruptionBudget",
        DEPLOYMENT,
    )  # fmt: skip
    assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]


def test_release_namespace_is_used_everywhere() -> None:
    objs = objects(namespace="infra")
    (hook,) = [h for h in by_kind(objs, "MutatingWebhookConfiguration").values()]
    assert {w["clientConfig"]["service"]["namespace"] for w in hook["webhooks"]} == {"infra"}
    for binding in [
        *by_kind(objs, "ClusterRoleBinding").values(),
        *by_kind(objs, "RoleBinding").values(),
    ]:
        assert binding["subjects"][0]["namespace"] == "infra"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"controller": {"logFormat": "xml"}}, "/controller/logFormat"),
        ({"controller": {"replicas": 2, "leaderElection": {"enabled": False}}},
         "/controller/leaderElection/enabled"),
        ({"controller": {"featureGates": {"RestartJobs": True}}}, "RestartJobs"),
        ({"controller": {"featureGates": {"RestartJob": "yes"}}}, "/controller/featureGates/RestartJob"),
        ({"controller": {"concurrency": 0}}, "/controller/concurrency"),
        ({"controller": {"qps": -1}}, "/controller/qps"),
        ({"controller": {"resources": {"limits": {"memory": "lots"}}}}, "/controller/resources/limits/memory"),
        ({"controller": {"extraArgs": ["namespace=x"]}}, "/controller/extraArgs/0"),
        ({"certificate": {"mode": "vault"}}, "/certificate/mode"),
        ({"metrics": {"port": 70000}}, "/metrics/port"),
        ({"metrics": {"serviceMonitor": {"interval": "soon"}}}, "/metrics/serviceMonitor/interval"),
        ({"image": {"digest": "latest"}}, "/image/digest"),
        ({"replicas": 2}, "'replicas' not allowed"),
        ({"controller": {"volumes": [{"name": "tmp", "emptyDir": {}}]}},
         'controller.volumes/volumeMounts: the name "tmp" is the chart\'s own'),
        ({"controller": {"volumeMounts": [{"name": "cert", "mountPath": "/x"}]}}, '"cert" is the chart'),
        ({"controller": {"volumeMounts": [{"name": "x"}]}}, "/controller/volumeMounts/0"),
        ({"controller": {"envFrom": [{"secret": {"name": "x"}}]}}, "/controller/envFrom/0"),
        ({"controller": {"hostNetwork": "yes"}}, "/controller/hostNetwork"),
    ], ids=['log format', 'replicas without leader election', 'unknown feature gate', 'feature gate not a boolean', 'concurrency zero', 'negative qps', 'memory not a quantity', 'extra arg not a flag', 'certificate mode', 'metrics port out of range', 'scrape interval not a duration', 'digest not a digest', 'unknown top-level value', "volume named as the chart's", "volume mount named as the chart's", 'volume mount without path', 'envFrom without a source', 'hostNetwork not a boolean'])  # fmt: skip
def test_bad_values_fail_with_a_clear_message(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmError) as err:
        objects(values)
    assert message in str(err.value)


def test_schema_knows_exactly_the_feature_gates() -> None:
    chart = helm.Chart.load(str(CHART))
    schema = chart.schema
    assert schema is not None
    gates = schema["properties"]["controller"]["properties"]["featureGates"]
    assert set(gates["propertyNames"]["enum"]) == set(DEFAULT_FEATURE_GATES)


def test_notes_tell_what_to_do_next() -> None:
    text = notes()
    assert "kubectl -n jobset-system rollout status deployment/jobset-controller-manager" in text
    assert "kind: JobSet" in text
    assert "port-forward svc/jobset-controller-manager-metrics-service 8080" in text
    assert "metrics.serviceMonitor.enabled=true" in text
    more = notes({"controller": {"replicas": 2}})
    assert "podDisruptionBudget.enabled=true" in more


def test_servicemonitor_verifies_secure_metrics_with_the_serving_ca() -> None:
    """Secure metrics by default: the ServiceMonitor scrapes over HTTPS with the
    ServiceAccount token, verifying against the internal certificate's CA for the metrics
    Service's name; with cert-manager, against the CA in the metrics certificate's Secret for
    the same name; a given tlsConfig is used as it is, and a certSecret without one is
    scraped unverified (nothing known to verify against); plain HTTP is the explicit
    metrics.secure=false."""

    def endpoint(values: dict[str, Any]) -> dict[str, Any]:
        monitor = {"serviceMonitor": {"enabled": True}}
        merged = {**values, "metrics": {**monitor, **values.get("metrics", {})}}
        sm = one(objects(merged), "ServiceMonitor", "jobset-controller-manager")
        (ep,) = sm["spec"]["endpoints"]
        return ep  # type: ignore[no-any-return]

    default = endpoint({})
    assert (default["scheme"], default["port"]) == ("https", "https-metrics")
    assert default["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert default["tlsConfig"] == {
        "ca": {"secret": {"name": "jobset-webhook-server-cert", "key": "ca.crt"}},
        "serverName": "jobset-controller-manager-metrics-service.jobset-system.svc",
    }
    assert endpoint({"certificate": {"mode": "cert-manager"}})["tlsConfig"] == {
        "ca": {"secret": {"name": "jobset-metrics-server-cert", "key": "ca.crt"}},
        "serverName": "jobset-controller-manager-metrics-service.jobset-system.svc",
    }
    for mode in ("internal", "cert-manager"):
        assert endpoint({"certificate": {"mode": mode}, "metrics": {"certSecret": "m"}})[
            "tlsConfig"
        ] == {"insecureSkipVerify": True}
    given = {"ca": {"secret": {"name": "m", "key": "ca.crt"}}, "serverName": "x.y.svc"}
    assert endpoint({"metrics": {"certSecret": "m", "serviceMonitor": {"enabled": True,
                                                                       "tlsConfig": given}}})[
        "tlsConfig"
    ] == given  # fmt: skip
    plain = endpoint({"metrics": {"secure": False}})
    assert (plain["scheme"], plain["port"]) == ("http", "http-metrics")
    assert "tlsConfig" not in plain and "bearerTokenFile" not in plain
    objs = objects({"metrics": {"secure": False}})
    args = _container(objs)["args"]
    assert "--metrics-secure=false" in args
    assert build_parser().parse_args(["controller", *args]).metrics_secure is False
    assert not [o for o in objs if "metrics-auth" in o["metadata"]["name"]]
    assert build_parser().parse_args(["controller", *_container(objects())["args"]]).metrics_secure
