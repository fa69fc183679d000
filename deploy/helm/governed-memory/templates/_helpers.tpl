{{/* The release's name, as every object's prefix. */}}
{{- define "gm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* What the chart knows of the code: services, variables, groups, topics (pnpm deploy:chart). */}}
{{- define "gm.topology" -}}
{{- .Files.Get "files/topology.json" -}}
{{- end -}}

{{- define "gm.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: governed-memory
{{- end -}}

{{/* A service's selector labels; dict: root, name. */}}
{{- define "gm.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* A service's settings: serviceDefaults with its own block merged over them, as YAML; dict: root, name. */}}
{{- define "gm.settings" -}}
{{- $own := index .root.Values.services .name | default dict -}}
{{- toYaml (mergeOverwrite (deepCopy .root.Values.serviceDefaults) (deepCopy $own)) -}}
{{- end -}}

{{/* The deployment's topic and group prefix (MEMORY_NAMESPACE, as the bus applies it). */}}
{{- define "gm.prefix" -}}
{{- with .Values.config.MEMORY_NAMESPACE }}{{ . }}.{{ end -}}
{{- end -}}

{{/* The services this deployment runs, in start order, one per line. */}}
{{- define "gm.services" -}}
{{- $topology := include "gm.topology" . | fromJson -}}
{{- range $name, $_ := $topology.services }}
{{- if not (and (eq $name "vector-indexer") (eq (toString ($.Values.config.MEMORY_SEMANTIC | default "on")) "off")) }}
{{ $name }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "gm.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "gm.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* A variable's value for one service: its own env's if it names it (even false or 0), else config's; dict: root, settings, name. */}}
{{- define "gm.envValue" -}}
{{- if hasKey (.settings.env | default dict) .name -}}
{{- toString (index .settings.env .name) -}}
{{- else if hasKey .root.Values.config .name -}}
{{- toString (index .root.Values.config .name) -}}
{{- end -}}
{{- end -}}

{{/* The variables the chart sets itself: a value for them in config or env is refused. */}}
{{- define "gm.chartVariables" -}}
HEALTH_HOST HEALTH_PORT MEMORY_PARTITIONS MEMORY_HOST MEMORY_PORT MEMORY_OPS_METRICS_URLS MEMORY_MASTER_KEY_FILE MEMORY_SIGNING_KEY_FILE MEMORY_RECEIPT_KEY_FILE MEMORY_ISSUER_CREDENTIAL_FILE MEMORY_MASTER_KEY
{{- end -}}

{{/*
  Refuses what would deploy a broken or unsafe memory, naming the value: an unknown variable
  (a typo would be silently ignored), a variable the chart owns, key material in values, no
  key Secret, a required variable set nowhere, an autoscaler allowed more replicas than the
  topics have partitions.
*/}}
{{- define "gm.validate" -}}
{{- $topology := include "gm.topology" . | fromJson -}}
{{- $known := dict -}}
{{- range $name, $service := $topology.services }}{{ range $service.variables }}{{ $_ := set $known .name true }}{{ end }}{{ end -}}
{{- $owned := splitList " " (include "gm.chartVariables" .) -}}
{{- range $name, $_ := .Values.config }}
{{- if not (or (hasKey $known $name) (hasPrefix "OTEL_" $name)) }}{{ fail (printf "config.%s: no service reads this variable (files/topology.json lists what each reads; OTEL_* go to every service)" $name) }}{{ end }}
{{- if has $name $owned }}{{ fail (printf "config.%s: the chart sets this variable itself (docs/deploy.md)" $name) }}{{ end }}
{{- end }}
{{- if and (not .Values.secrets.existingSecret) (not .Values.secrets.csi) }}
{{- fail "secrets: name secrets.existingSecret or secrets.csi: the services read their keys from files, never from values (docs/deploy.md#secrets)" }}
{{- end }}
{{- range $name := splitList "\n" (include "gm.services" . | trim) }}
{{- $settings := include "gm.settings" (dict "root" $ "name" $name) | fromYaml }}
{{- range $var, $_ := $settings.env }}
{{- if not (or (hasKey $known $var) (hasPrefix "OTEL_" $var)) }}{{ fail (printf "services.%s.env.%s: no service reads this variable" $name $var) }}{{ end }}
{{- if has $var $owned }}{{ fail (printf "services.%s.env.%s: the chart sets this variable itself (docs/deploy.md)" $name $var) }}{{ end }}
{{- end }}
{{- range (index $topology.services $name).variables }}
{{- if and .required (not (hasKey (index $topology.services $name).secretFiles .name)) (eq (include "gm.envValue" (dict "root" $ "settings" $settings "name" .name)) "") }}
{{- fail (printf "config.%s: required by %s and set nowhere" .name $name) }}
{{- end }}
{{- end }}
{{- if and $settings.autoscaling.enabled (ne $name "retrieval-broker") (gt (int $settings.autoscaling.maxReplicas) (int $.Values.partitions)) }}
{{- fail (printf "services.%s.autoscaling.maxReplicas (%d) exceeds partitions (%d): a consumer group's members beyond its partitions sit idle" $name (int $settings.autoscaling.maxReplicas) (int $.Values.partitions)) }}
{{- end }}
{{- end }}
{{- end -}}
