{{/* The name of every object of a release. */}}
{{- define "mcp-resources.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mcp-resources.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mcp-resources.labels" -}}
{{ include "mcp-resources.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
Whether an identity provider is configured: oauth.issuer, an --oauth-issuer
in extraArgs, or an oauth section at the top of the resources file.
*/}}
{{- define "mcp-resources.oauth" -}}
{{- $found := .Values.oauth.issuer -}}
{{- range .Values.extraArgs -}}
{{- if hasPrefix "--oauth-issuer" (toString .) -}}{{- $found = "yes" -}}{{- end -}}
{{- end -}}
{{- if regexMatch "(?m)^oauth:" (toString .Values.resourcesFile) -}}{{- $found = "yes" -}}{{- end -}}
{{- if $found -}}yes{{- end -}}
{{- end -}}

{{/*
The combinations the server would refuse, refused at render time instead
of by a pod that never becomes ready.
*/}}
{{- define "mcp-resources.validate" -}}
{{- $oauth := include "mcp-resources.oauth" . -}}
{{- if and (not .Values.tokens.secretName) (not $oauth) (not .Values.anonymous) -}}
{{- fail "no caller would be identified: set tokens.secretName (a Secret holding a tokens file, see `mcp-resources hash-token`) or oauth.issuer (an identity provider), or anonymous=true to serve every caller as one principal without credentials" -}}
{{- end -}}
{{- if and .Values.anonymous (or .Values.tokens.secretName $oauth) -}}
{{- fail "anonymous=true serves callers without credentials: it cannot go with tokens.secretName or an identity provider; drop one" -}}
{{- end -}}
{{- if and .Values.resourcesFile (or .Values.postgres.urlSecret .Values.postgres.listenSecret .Values.bucket.name) -}}
{{- fail "resourcesFile names its own sources: leave postgres.urlSecret, postgres.listenSecret and bucket.name empty, and give the file's ${NAME} variables with resourcesFileEnv (the server refuses --config beside --postgres or --bucket)" -}}
{{- end -}}
{{- range .Values.resourcesFileEnv -}}
{{- if not .name -}}
{{- fail "resourcesFileEnv: every entry needs a name" -}}
{{- end -}}
{{- if eq (hasKey . "value") (not (empty .secretName)) -}}
{{- fail (printf "resourcesFileEnv %s: give either value or secretName (with secretKey), not both and not neither" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
