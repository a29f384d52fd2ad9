{{/*
Names are fixed: one JobSet controller per cluster, and the controller finds its webhook
Service, Secret and configurations by these names (src/jobset/webhooks/manifests.py).
*/}}
{{- define "jobset.name" -}}jobset{{- end -}}
{{- define "jobset.controllerName" -}}jobset-controller-manager{{- end -}}
{{- define "jobset.webhookService" -}}jobset-webhook-service{{- end -}}
{{- define "jobset.webhookSecret" -}}jobset-webhook-server-cert{{- end -}}
{{- define "jobset.metricsService" -}}jobset-controller-manager-metrics-service{{- end -}}
{{- define "jobset.mutatingConfiguration" -}}jobset-mutating-webhook-configuration{{- end -}}
{{- define "jobset.validatingConfiguration" -}}jobset-validating-webhook-configuration{{- end -}}
{{- define "jobset.leaseName" -}}jobset-controller-leader{{- end -}}
{{- define "jobset.certificate" -}}jobset-serving-cert{{- end -}}
{{- define "jobset.metricsCertificate" -}}jobset-metrics-cert{{- end -}}
{{- define "jobset.certDir" -}}/tmp/k8s-webhook-server/serving-certs{{- end -}}
{{- define "jobset.metricsCertDir" -}}/tmp/k8s-metrics-server/metrics-certs{{- end -}}
{{/* The metrics Service's port name: Istio and others read the protocol from its prefix. */}}
{{- define "jobset.metricsPortName" -}}
{{- if .Values.metrics.secure -}}https-metrics{{- else -}}http-metrics{{- end -}}
{{- end -}}

{{- define "jobset.internalCerts" -}}
{{- if eq .Values.certificate.mode "internal" -}}true{{- end -}}
{{- end -}}

{{/* cert-manager issues the secure metrics server's certificate (Certificate
jobset-metrics-cert): certificate.mode cert-manager, metrics.secure, no metrics.certSecret. */}}
{{- define "jobset.certManagerMetricsCert" -}}
{{- if and (not (include "jobset.internalCerts" .)) .Values.metrics.secure (not .Values.metrics.certSecret) -}}true{{- end -}}
{{- end -}}

{{/* The Secret the secure metrics server serves from (--metrics-cert-dir), if any: the
user's metrics.certSecret, or the one cert-manager fills for jobset-metrics-cert. */}}
{{- define "jobset.metricsCertSecret" -}}
{{- if .Values.metrics.secure -}}
{{- if .Values.metrics.certSecret -}}
{{ .Values.metrics.certSecret }}
{{- else if include "jobset.certManagerMetricsCert" . -}}
jobset-metrics-server-cert
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "jobset.labels" -}}
app.kubernetes.io/name: {{ include "jobset.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: jobset
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels selecting the controller's pods (the webhook Service depends on them). */}}
{{- define "jobset.selectorLabels" -}}
control-plane: controller-manager
{{- end -}}

{{- define "jobset.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* --feature-gates=A=true,B=false, sorted by name. */}}
{{- define "jobset.featureGates" -}}
{{- $gates := list -}}
{{- range $name, $on := .Values.controller.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" $name $on) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/* The controller's command-line flags (the `jobset controller` contract). */}}
{{- define "jobset.args" -}}
{{- $c := .Values.controller -}}
- --metrics-port={{ .Values.metrics.port }}
- --health-port={{ .Values.health.port }}
- --webhook-port={{ .Values.webhook.port }}
- --concurrency={{ $c.concurrency }}
- --qps={{ $c.qps }}
- --burst={{ $c.burst }}
- --log-format={{ $c.logFormat }}
- --log-level={{ $c.logLevel }}
- --graceful-shutdown-timeout={{ $c.gracefulShutdownTimeout }}
- --webhook-drain-seconds={{ $c.webhookDrainSeconds }}
{{- if $c.leaderElection.enabled }}
- --leader-elect
- --leader-election-id={{ include "jobset.leaseName" . }}
- --leader-elect-lease-duration={{ $c.leaderElection.leaseDuration }}
- --leader-elect-renew-deadline={{ $c.leaderElection.renewDeadline }}
- --leader-elect-retry-period={{ $c.leaderElection.retryPeriod }}
{{- end }}
{{- with include "jobset.featureGates" . }}
- --feature-gates={{ . }}
{{- end }}
{{- if $c.perJobSetMetrics }}
- --per-jobset-metrics
{{- end }}
{{- if .Values.metrics.secure }}
- --metrics-secure
{{- if include "jobset.metricsCertSecret" . }}
- --metrics-cert-dir={{ include "jobset.metricsCertDir" . }}
{{- end }}
{{- else }}
{{- if .Values.metrics.certSecret }}
{{- fail "metrics.certSecret is only used with metrics.secure=true" }}
{{- end }}
- --metrics-secure=false
{{- end }}
{{- if not (include "jobset.internalCerts" .) }}
- --cert-management=files
- --cert-dir={{ include "jobset.certDir" . }}
{{- end }}
{{- if .Values.webhook.clientAuth.fromCluster }}
- --webhook-client-ca-from-cluster
{{- end }}
{{- range $c.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}
