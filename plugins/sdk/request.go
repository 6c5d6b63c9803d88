package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/protocol"
)

// Request is one stage call: the stage input every plugin receives, plus the
// host services (events and the plugin's key-value store).
type Request struct {
	*stage.Input
	// Plugin is this plugin's own name.
	Plugin string
	// Host reaches kube-aws: events and the persistent store. Never nil
	// inside Serve; tests may leave it nil and use the methods below, which
	// then do nothing.
	Host Host
}

// Host is what kube-aws serves back to a plugin: events and the plugin's
// persistent key-value store (the protocol's own interface).
type Host = protocol.Host

// Cluster decodes cluster.yaml from the input.
func (r *Request) Cluster() (*config.Cluster, error) {
	var c config.Cluster
	if err := json.Unmarshal(r.Config, &c); err != nil {
		return nil, fmt.Errorf("decoding cluster config: %w", err)
	}
	return &c, nil
}

// DecodeValues decodes this plugin's cluster-level values into v.
func (r *Request) DecodeValues(v any) error {
	pv, ok := r.Values[r.Plugin]
	if !ok || len(pv.Values) == 0 {
		return nil
	}
	if err := json.Unmarshal(pv.Values, v); err != nil {
		return fmt.Errorf("decoding values of plugin %s: %w", r.Plugin, err)
	}
	return nil
}

// Log sends a log line to kube-aws, which prints it under the plugin's name.
func (r *Request) Log(level, msg string) {
	if r.Host != nil {
		_ = r.Host.Emit(stage.Event{Kind: stage.EventLog, Level: level, Message: msg})
	}
}

// Progress reports progress on long work; total 0 means unknown.
func (r *Request) Progress(current, total int64, msg string) {
	if r.Host != nil {
		_ = r.Host.Emit(stage.Event{Kind: stage.EventProgress, Current: current, Total: total, Message: msg})
	}
}
