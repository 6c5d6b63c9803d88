{{- define "ccm.labels" -}}
app.kubernetes.io/name: aws-cloud-controller-manager
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
{{- end -}}
