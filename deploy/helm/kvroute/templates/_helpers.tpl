{{- define "kvroute.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kvroute.fullname" -}}
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

{{- define "kvroute.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kvroute.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kvroute.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kvroute.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: router
{{- end }}

{{- define "kvroute.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kvroute.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "kvroute.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- /* The Secret holding the chart-made API keys and admin token (given as values). */}}
{{- define "kvroute.secretName" -}}
{{- printf "%s-secrets" (include "kvroute.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kvroute.apiKeysSecret" -}}
{{- default (include "kvroute.secretName" .) .Values.apiKeys.existingSecret }}
{{- end }}

{{- define "kvroute.adminTokenSecret" -}}
{{- default (include "kvroute.secretName" .) .Values.adminToken.existingSecret }}
{{- end }}

{{- define "kvroute.apiKeysEnabled" -}}
{{- if or .Values.apiKeys.existingSecret .Values.apiKeys.value }}true{{ end }}
{{- end }}

{{- define "kvroute.adminTokenEnabled" -}}
{{- if or .Values.adminToken.existingSecret .Values.adminToken.value }}true{{ end }}
{{- end }}

{{- define "kvroute.discoveryNamespace" -}}
{{- default .Release.Namespace .Values.discovery.namespace }}
{{- end }}
