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

// SecretMarker is the marker that stands for this plugin's generated secret
// key (((secret:<plugin>/generated/<key>))): put it where the value belongs,
// like a sensitive value's marker; the machines get the plain text.
func (r *Request) SecretMarker(key string) string {
	return config.GeneratedMarker(r.Plugin, key)
}

// Secrets is this plugin's store of generated secrets, which kube-aws keeps
// in credentials/<plugin>/ beside cluster.yaml: Get and Put the plain text
// by key, Marker for what stands for it in rendered files. Plugins that keep
// several secrets (a CA and its leaves) hand it to their logic as is.
type Secrets struct{ r *Request }

// GeneratedSecrets returns this plugin's store of generated secrets.
func (r *Request) GeneratedSecrets() Secrets { return Secrets{r} }

// Get returns the plain text kept under key, and whether there is one.
func (s Secrets) Get(key string) ([]byte, bool, error) {
	if s.r.Host == nil {
		return nil, false, fmt.Errorf("plugin %s: generated secret %s: kube-aws offers no host services to this call", s.r.Plugin, key)
	}
	return s.r.Host.SecretGet(key)
}

// Put keeps value under key.
func (s Secrets) Put(key string, value []byte) error {
	if s.r.Host == nil {
		return fmt.Errorf("plugin %s: generated secret %s: kube-aws offers no host services to this call", s.r.Plugin, key)
	}
	_, err := s.r.Host.SecretPut(key, value)
	return err
}

// Marker is the marker that stands for the secret kept under key.
func (s Secrets) Marker(key string) string { return s.r.SecretMarker(key) }

// GeneratedSecret returns the marker of this plugin's secret key, which
// kube-aws keeps (credentials/<plugin>/<key> beside cluster.yaml, never
// anywhere else), calling gen to make it the first time. Use it for a CA
// key or a token: the plugin never writes one to disk. SecretGet on Host
// reads the plain text back (to sign with a CA key, say).
func (r *Request) GeneratedSecret(key string, gen func() ([]byte, error)) (string, error) {
	if r.Host == nil {
		return "", fmt.Errorf("plugin %s: generated secret %s: kube-aws offers no host services to this call", r.Plugin, key)
	}
	if _, ok, err := r.Host.SecretGet(key); err != nil {
		return "", fmt.Errorf("plugin %s: reading generated secret %s: %w", r.Plugin, key, err)
	} else if ok {
		return r.SecretMarker(key), nil
	}
	v, err := gen()
	if err != nil {
		return "", fmt.Errorf("plugin %s: generating secret %s: %w", r.Plugin, key, err)
	}
	m, err := r.Host.SecretPut(key, v)
	if err != nil {
		return "", fmt.Errorf("plugin %s: keeping generated secret %s: %w", r.Plugin, key, err)
	}
	return m, nil
}
