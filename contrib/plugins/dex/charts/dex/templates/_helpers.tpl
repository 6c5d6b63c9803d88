{{- define "dex.labels" -}}
app.kubernetes.io/name: dex
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
{{- end -}}
{{- define "dex.selector" -}}
app.kubernetes.io/name: dex
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
