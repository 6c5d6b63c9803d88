{{- define "ca.labels" -}}
app.kubernetes.io/name: cluster-autoscaler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
{{- end -}}
