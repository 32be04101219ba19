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

{{- /* The runner Pods' settings that berthd's launcher and berth-controller share; only
their ServiceAccount differs (berthd's runners need no Kubernetes API, the controller's keep
their state in it): (dict "root" $ "serviceAccount" NAME). */ -}}
{{- define "berth.runnerPodEnv" -}}
{{- $values := .root.Values -}}
- {name: KUBERNETES_IMAGE, value: {{ include "berth.runnerImage" .root | quote }}}
- {name: KUBERNETES_IMAGE_PULL_POLICY, value: {{ $values.ephemeralRunner.pullPolicy | quote }}}
{{- with .serviceAccount }}
- {name: KUBERNETES_SERVICE_ACCOUNT, value: {{ . | quote }}}
{{- end }}
{{- with $values.ephemeralRunner.cpu }}
- {name: KUBERNETES_CPU, value: {{ . | quote }}}
{{- end }}
{{- with $values.ephemeralRunner.memory }}
- {name: KUBERNETES_MEMORY, value: {{ . | quote }}}
{{- end }}
{{- with $values.ephemeralRunner.imagePullSecrets }}
- {name: KUBERNETES_IMAGE_PULL_SECRETS, value: {{ join "," . | quote }}}
{{- end }}
{{- end -}}

{{- define "berth.runnerImage" -}}
{{- printf "%s:%s" .Values.ephemeralRunner.image.repository (default .Chart.AppVersion .Values.ephemeralRunner.image.tag) -}}
{{- end -}}
