{{/* Names and labels shared by every object of the chart. */}}
{{- define "wrs.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "wrs.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "wrs.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "wrs.image" -}}
{{- if .Values.image.digest -}}{{ .Values.image.repository }}@{{ .Values.image.digest }}{{- else -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end -}}
{{- end -}}

{{- define "wrs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "wrs.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{- define "wrs.secretName" -}}
{{- default (printf "%s-secrets" (include "wrs.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* The secret keys mounted as files: the existing Secret's `keys`, or the non-null `values`. */}}
{{- define "wrs.secretKeys" -}}
{{- if .Values.secrets.existingSecret -}}
{{- range .Values.secrets.keys }}{{ . }} {{ end -}}
{{- else -}}
{{- range $k, $v := .Values.secrets.values }}{{ if not (kindIs "invalid" $v) }}{{ $k }} {{ end }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
Mebibytes of a Kubernetes memory quantity (512Mi, 1Gi, 1G, 1073741824), as a whole number; empty when unset.
*/}}
{{- define "wrs.memoryMiB" -}}
{{- $q := toString . -}}
{{- if and . (ne $q "<nil>") -}}
{{- $factor := 0.00000095367431640625 -}}
{{- $number := $q -}}
{{- range $suffix, $f := dict "Ki" 0.0009765625 "Mi" 1.0 "Gi" 1024.0 "Ti" 1048576.0 "k" 0.00095367431640625 "M" 0.95367431640625 "G" 953.67431640625 "T" 953674.31640625 -}}
{{- if hasSuffix $suffix $q -}}{{- $factor = $f -}}{{- $number = trimSuffix $suffix $q -}}{{- end -}}
{{- end -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?$" $number) -}}{{- fail (printf "cannot read the memory quantity %q" $q) -}}{{- end -}}
{{- mulf (float64 $number) $factor | floor | int -}}
{{- end -}}
{{- end -}}

{{/* NODE_OPTIONS capping V8's old space at `percent` of the container's memory limit (nothing without a limit). */}}
{{- define "wrs.heapEnv" -}}
{{- $mib := include "wrs.memoryMiB" (dig "limits" "memory" "" (default dict .resources)) -}}
{{- if $mib }}
  - name: NODE_OPTIONS
    value: "--max-old-space-size={{ div (mul (atoi $mib) .percent) 100 }}"
{{- end -}}
{{- end -}}

{{/*
Environment of the API and worker containers: the ConfigMap, X_FILE for each secret, Temporal's TLS files, and
the heap cap. Called with (dict "root" $ "component" .Values.api).
*/}}
{{- define "wrs.env" -}}
{{- $component := .component -}}
{{- with .root -}}
envFrom:
  - configMapRef:
      name: {{ include "wrs.fullname" . }}-config
env:
{{- include "wrs.heapEnv" (dict "resources" $component.resources "percent" (int $component.heapPercentOfLimit)) }}
{{- range (include "wrs.secretKeys" . | splitList " " | compact) }}
  - name: {{ . }}_FILE
    value: /etc/wrs/secrets/{{ . }}
{{- end }}
{{- with .Values.temporal.tls }}
{{- if and .existingSecret .hasCA }}
  - name: TEMPORAL_TLS_CA_FILE
    value: /etc/wrs/temporal-tls/ca.crt
{{- end }}
{{- if and .existingSecret .hasClientCert }}
  - name: TEMPORAL_TLS_CERT_FILE
    value: /etc/wrs/temporal-tls/tls.crt
  - name: TEMPORAL_TLS_KEY_FILE
    value: /etc/wrs/temporal-tls/tls.key
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "wrs.volumeMounts" -}}
volumeMounts:
  - name: secrets
    mountPath: /etc/wrs/secrets
    readOnly: true
  - name: tmp
    mountPath: /tmp
{{- if .Values.temporal.tls.existingSecret }}
  - name: temporal-tls
    mountPath: /etc/wrs/temporal-tls
    readOnly: true
{{- end }}
{{- end -}}

{{- define "wrs.volumes" -}}
volumes:
  - name: secrets
    secret:
      secretName: {{ include "wrs.secretName" . }}
      defaultMode: 0440
  - name: tmp
    emptyDir:
      sizeLimit: 256Mi
{{- if .Values.temporal.tls.existingSecret }}
  - name: temporal-tls
    secret:
      secretName: {{ .Values.temporal.tls.existingSecret }}
      defaultMode: 0440
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by the API and worker pods. */}}
{{- define "wrs.podCommon" -}}
serviceAccountName: {{ include "wrs.serviceAccountName" . }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Labels of the Prometheus Operator objects: the chart's and `monitoring.labels`. */}}
{{- define "wrs.monitoringLabels" -}}
{{ include "wrs.labels" . }}
{{- with .Values.monitoring.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
PUBLIC_BASE_URL: the origin clients reach the API at, which every signed file link and stream link (D19, D34)
starts with. The workers have no request to take it from: unset, they would sign links on http://127.0.0.1:8080.
Defaults to https://<ingress.host> with the Ingress; without it there is no default (the render fails).
*/}}
{{- define "wrs.publicBaseUrl" -}}
{{- if .Values.config.PUBLIC_BASE_URL -}}
{{- .Values.config.PUBLIC_BASE_URL -}}
{{- else if and .Values.ingress.enabled .Values.ingress.host -}}
https://{{ .Values.ingress.host }}
{{- else -}}
{{- fail "config.PUBLIC_BASE_URL is required: the https origin clients reach the API at (file and stream links are built on it); with ingress.enabled it defaults to https://<ingress.host>" -}}
{{- end -}}
{{- end -}}

{{/*
ingress-nginx's request body limit: the API's own (config.MAX_UPLOAD_BYTES, default 268435456 as in
config/index.ts) plus 1 MiB of multipart framing, in MiB rounded up. Below it, an upload the API would take
is refused by the controller with its own HTML 413 instead of the API's JSON envelope.
*/}}
{{- define "wrs.ingressBodySize" -}}
{{- $bytes := .Values.config.MAX_UPLOAD_BYTES | default 268435456 | float64 | int64 -}}
{{- if le $bytes 0 -}}{{- fail (printf "cannot read config.MAX_UPLOAD_BYTES %v as bytes" .Values.config.MAX_UPLOAD_BYTES) -}}{{- end -}}
{{- add (div (add $bytes 1048575) 1048576) 1 -}}m
{{- end -}}

{{/* Whether the secret keys include `key` ("true" or ""). */}}
{{- define "wrs.hasSecretKey" -}}
{{- if has .key (include "wrs.secretKeys" .root | splitList " " | compact) -}}true{{- end -}}
{{- end -}}

{{/*
TEMPORAL_TLS as the service decides it (config/index.ts temporalTls): on with temporal.tls.enabled, a CA, a
client certificate or an API key. The hook Job's temporal CLI takes an explicit "false" as "no TLS" even with
an API key: it then sent the key in clear and failed against a TLS frontend, failing the install.
*/}}
{{- define "wrs.temporalTls" -}}
{{- $tls := .Values.temporal.tls -}}
{{- $apiKey := include "wrs.hasSecretKey" (dict "root" . "key" "TEMPORAL_API_KEY") -}}
{{- or $tls.enabled (and $tls.existingSecret (or $tls.hasCA $tls.hasClientCert)) (eq $apiKey "true") | toString -}}
{{- end -}}
