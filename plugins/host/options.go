package host

import (
	"io"
	"os"
	"time"

	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/source"
)

const (
	// DefaultStartTimeout bounds the handshake and GetInfo of one plugin.
	DefaultStartTimeout = 10 * time.Second
	// DefaultStageTimeout bounds one stage call of one plugin. Deploy waits
	// for CloudFormation, hence minutes.
	DefaultStageTimeout = 10 * time.Minute
	// DefaultCancelGrace is Options.CancelGrace's default.
	DefaultCancelGrace = 30 * time.Second
)

// Options configure Launch.
type Options struct {
	// StartTimeout bounds the handshake and GetInfo (default 10s).
	StartTimeout time.Duration
	// StageTimeout bounds each stage call (default 10m).
	StageTimeout time.Duration
	// Lock, when set, is checked before any non-built-in plugin starts.
	Lock *source.Lockfile
	// Stderr receives the plugins' output, one line at a time prefixed
	// "[<name>] " (default os.Stderr).
	Stderr io.Writer
	// StoreDir holds each plugin's key-value store as <plugin>.json
	// (normally .kube-aws/store); empty keeps stores in memory.
	StoreDir string
	// Credentials keeps the secrets plugins generate (normally
	// credentials/ beside cluster.yaml); nil keeps them in memory.
	Credentials *Credentials
	// HostVersion is sent to plugins in GetInfo (default core/version.Version).
	HostVersion string
	// Env is added to the plugins' environment (KEY=VALUE), over kube-aws's own.
	Env []string
	// CancelGrace is how long a plugin that reaches AWS may take to wind a
	// stage call up once kube-aws is interrupted (it is asked to stop, and
	// its waits end), before the call is cut and the plugin killed
	// (default 30s).
	CancelGrace time.Duration
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StageTimeout <= 0 {
		o.StageTimeout = DefaultStageTimeout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.HostVersion == "" {
		o.HostVersion = version.Version
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = DefaultCancelGrace
	}
	return o
}
