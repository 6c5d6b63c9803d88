package main

import "errors"

// clusterSchema returns the JSON Schema of cluster.yaml from core/config/schema.
func clusterSchema() ([]byte, error) {
	return nil, errors.New("the JSON Schema of cluster.yaml is not built into this kube-aws yet (core/config/schema)")
}
