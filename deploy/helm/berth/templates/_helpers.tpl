{{- define "berth.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "berth.labels" -}}
app.kubernetes.io/name: berth
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "berth.selector" -}}
app.kubernetes.io/name: berth
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: berthd
{{- end -}}

{{- define "berth.runnerNamespace" -}}
{{- default .Release.Namespace .Values.ephemeralRunner.namespace -}}
{{- end -}}

{{- define "berth.adminTokenSecret" -}}
{{- default (printf "%s-admin-token" (include "berth.fullname" .)) .Values.adminToken.existingSecret -}}
{{- end -}}

{{- define "berth.advertiseUrl" -}}
{{- if .Values.advertiseUrl -}}
{{- .Values.advertiseUrl -}}
{{- else -}}
{{- printf "%s://%s.%s.svc:%v" (ternary "https" "http" (ne .Values.tls.secretName "")) (include "berth.fullname" .) .Release.Namespace .Values.service.port -}}
{{- end -}}
{{- end -}}

{{- define "berth.runnerImage" -}}
{{- printf "%s:%s" .Values.ephemeralRunner.image.repository (default .Chart.AppVersion .Values.ephemeralRunner.image.tag) -}}
{{- end -}}
