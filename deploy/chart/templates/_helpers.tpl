{{/* Names and labels. */}}
{{- define "ao.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ao.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's name: fullname-component, within 63 characters. */}}
{{- define "ao.componentName" -}}
{{- printf "%s-%s" (include "ao.fullname" .root | trunc (int (sub 62 (len .component))) | trimSuffix "-") .component -}}
{{- end -}}

{{- define "ao.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ao.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ao.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ao.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: {{ include "ao.name" .root }}
{{- end -}}

{{- define "ao.image" -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}

{{- define "ao.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ao.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the tokens and the webhook secret. */}}
{{- define "ao.authSecretName" -}}
{{- default (include "ao.fullname" .) .Values.auth.existingSecret -}}
{{- end -}}

{{- define "ao.postgres" -}}
{{- if or .Values.database.url .Values.database.existingSecret -}}true{{- end -}}
{{- end -}}

{{- define "ao.databaseSecretName" -}}
{{- default (include "ao.componentName" (dict "root" . "component" "database")) .Values.database.existingSecret -}}
{{- end -}}

{{- define "ao.databaseSecretKey" -}}
{{- if .Values.database.existingSecret -}}{{ .Values.database.existingSecretKey }}{{- else -}}database-url{{- end -}}
{{- end -}}

{{- define "ao.coordinatorURL" -}}
{{- printf "http://%s:%v" (include "ao.componentName" (dict "root" . "component" "coordinator")) .Values.coordinator.service.port -}}
{{- end -}}

{{/*
The host names the coordinator answers to: the values', the Ingress hosts, and the Service's names that
runners and other pods use.
*/}}
{{- define "ao.allowedHosts" -}}
{{- $svc := include "ao.componentName" (dict "root" . "component" "coordinator") -}}
{{- $hosts := list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) -}}
{{- if .Values.ingress.enabled -}}
{{- range .Values.ingress.hosts -}}
{{- if .host -}}{{- $hosts = append $hosts .host -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- concat $hosts .Values.coordinator.allowedHosts | uniq | join "," -}}
{{- end -}}

{{/*
A token of the chart's Secret, base64: the value given, else the one the installed Secret holds, else 32
random characters (so an upgrade keeps the tokens install generated).
*/}}
{{- define "ao.token" -}}
{{- $given := index . 0 -}}
{{- $installed := index . 1 -}}
{{- if $given -}}
{{- $given | b64enc -}}
{{- else if $installed -}}
{{- $installed -}}
{{- else -}}
{{- randAlphaNum 32 | b64enc -}}
{{- end -}}
{{- end -}}
