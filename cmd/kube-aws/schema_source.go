package main

import "github.com/kube-aws/kube-aws/core/config/schema"

// clusterSchema returns the JSON Schema of cluster.yaml, generated from the
// Go types by core/config/schema.
func clusterSchema() ([]byte, error) { return schema.JSON() }
