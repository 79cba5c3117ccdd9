{{- define "flotilla-agent.name" -}}{{ .Release.Name | trunc 50 | trimSuffix "-" }}{{- end }}

{{/* Every object of the chart carries these labels: `flotilla unjoin --uninstall` deletes by them. */}}
{{- define "flotilla-agent.labels" -}}
app.kubernetes.io/name: flotilla-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "flotilla-agent.selectorLabels" -}}
app.kubernetes.io/name: flotilla-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "flotilla-agent.tokenSecret" -}}
{{- .Values.bootstrapToken.existingSecret | default (printf "%s-bootstrap" (include "flotilla-agent.name" .)) -}}
{{- end }}
