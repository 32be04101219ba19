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

{{- /* The runner Pods' settings that berthd's launcher and berth-controller share. */ -}}
{{- define "berth.runnerPodEnv" -}}
- {name: KUBERNETES_IMAGE, value: {{ include "berth.runnerImage" . | quote }}}
- {name: KUBERNETES_IMAGE_PULL_POLICY, value: {{ .Values.ephemeralRunner.pullPolicy | quote }}}
{{- with .Values.ephemeralRunner.serviceAccount }}
- {name: KUBERNETES_SERVICE_ACCOUNT, value: {{ . | quote }}}
{{- end }}
{{- with .Values.ephemeralRunner.cpu }}
- {name: KUBERNETES_CPU, value: {{ . | quote }}}
{{- end }}
{{- with .Values.ephemeralRunner.memory }}
- {name: KUBERNETES_MEMORY, value: {{ . | quote }}}
{{- end }}
{{- with .Values.ephemeralRunner.imagePullSecrets }}
- {name: KUBERNETES_IMAGE_PULL_SECRETS, value: {{ join "," . | quote }}}
{{- end }}
{{- end -}}

{{- define "berth.runnerImage" -}}
{{- printf "%s:%s" .Values.ephemeralRunner.image.repository (default .Chart.AppVersion .Values.ephemeralRunner.image.tag) -}}
{{- end -}}
