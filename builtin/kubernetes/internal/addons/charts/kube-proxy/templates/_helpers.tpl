{{- define "kube-proxy.labels" -}}
app.kubernetes.io/name: kube-proxy
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
{{- end -}}
