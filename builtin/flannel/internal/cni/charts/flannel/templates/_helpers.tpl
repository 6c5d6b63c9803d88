{{- define "flannel.labels" -}}
app.kubernetes.io/name: flannel
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
{{- end -}}
