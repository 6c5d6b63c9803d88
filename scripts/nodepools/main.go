// Command nodepools writes a cluster.yaml with N node pools, copies of the
// first node pool of the cluster.yaml it reads, named pool000, pool001...:
// the render benchmark's large clusters (scripts/bench-render-ratio.sh).
//
//	go run ./scripts/nodepools -n 100 <cluster.yaml.example >cluster.yaml
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	n := flag.Int("n", 10, "how many node pools")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *n); err != nil {
		fmt.Fprintln(os.Stderr, "nodepools:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, n int) error {
	raw, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("reading the cluster.yaml: %w", err)
	}
	pools, _ := doc["nodePools"].([]any)
	if len(pools) == 0 {
		return fmt.Errorf("the cluster.yaml has no nodePools to copy")
	}
	first, err := json.Marshal(pools[0])
	if err != nil {
		return err
	}
	copies := make([]any, n)
	for i := range copies {
		var p map[string]any
		if err := json.Unmarshal(first, &p); err != nil {
			return err
		}
		p["name"] = fmt.Sprintf("pool%03d", i)
		copies[i] = p
	}
	doc["nodePools"] = copies
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
