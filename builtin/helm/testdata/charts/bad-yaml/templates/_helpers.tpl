{{- define "bad-yaml.name" -}}: not : yaml {{- end -}}
