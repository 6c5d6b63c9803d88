{{- define "coredns.labels" -}}
app.kubernetes.io/name: coredns
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: kube-aws
k8s-app: kube-dns
{{- end -}}
