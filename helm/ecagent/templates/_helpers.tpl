{{/* The chart name, or nameOverride. */}}
{{- define "ecagent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The fully qualified name of the release's objects: the release name when it
already contains the chart name, else release-chart; 63 characters at most.
*/}}
{{- define "ecagent.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ecagent.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "ecagent.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "ecagent.labels" -}}
helm.sh/chart: {{ include "ecagent.chart" . }}
{{ include "ecagent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: agent
app.kubernetes.io/part-of: ecagent
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the agent's pods; never change them on upgrade. */}}
{{- define "ecagent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ecagent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ecagent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ecagent.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ecagent.image" -}}
{{- $repo := printf "%s/%s" .Values.image.registry .Values.image.repository | trimPrefix "/" }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret with the MQTT credentials, "" when there is none. */}}
{{- define "ecagent.mqttSecretName" -}}
{{- if .Values.mqtt.existingSecret }}
{{- .Values.mqtt.existingSecret }}
{{- else if or .Values.mqtt.username .Values.mqtt.password .Values.mqtt.tls.ca .Values.mqtt.tls.cert .Values.mqtt.tls.key }}
{{- printf "%s-mqtt" (include "ecagent.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The agent's configuration file: .Values.config with the keys the chart
manages. The node name comes from the environment (ECAGENT_HOST).
*/}}
{{- define "ecagent.config" -}}
{{- include "ecagent.checkConfigDurations" . }}
{{- $config := deepCopy .Values.config }}
{{- $metrics := default (dict) $config.metrics }}
{{- $_ := set $metrics "listen" (printf ":%d" (int .Values.containerPort)) }}
{{- if .Values.webConfig.existingSecret }}
{{- $_ := set $metrics "webconfig" "/etc/ecagent/web/web-config.yml" }}
{{- end }}
{{- $_ := set $config "metrics" $metrics }}
{{- toYaml $config }}
{{- end }}

{{/*
A monitor's scrape formats for native histograms: the protobuf format
first (the only one that carries them), and the classic buckets kept.
*/}}
{{- define "ecagent.nativeHistogramScrape" -}}
scrapeProtocols:
  - PrometheusProto
  - OpenMetricsText1.0.0
  - PrometheusText0.0.4
scrapeClassicHistograms: true
{{- end }}

{{/*
A probe of .Values (livenessProbe or readinessProbe) with the scheme
webConfig.tls asks for: HTTPS when the endpoints serve TLS. Call with
(list $ probe).
*/}}
{{- define "ecagent.probe" -}}
{{- $root := index . 0 }}
{{- $probe := deepCopy (index . 1) }}
{{- if and $root.Values.webConfig.tls $probe.httpGet }}
{{- $_ := set $probe.httpGet "scheme" "HTTPS" }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/*
A monitor endpoint's scheme, TLS and credentials (webConfig); call with
(list $ monitorValues).
*/}}
{{- define "ecagent.monitorSecurity" -}}
{{- $root := index . 0 }}
{{- $mon := index . 1 }}
{{- if $root.Values.webConfig.tls }}
scheme: HTTPS
{{- end }}
{{- with $mon.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $mon.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
