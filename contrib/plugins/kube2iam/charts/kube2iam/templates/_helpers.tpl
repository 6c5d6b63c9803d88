{{- define "kube2iam.labels" -}}
app.kubernetes.io/name: kube2iam
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
{{- end -}}
