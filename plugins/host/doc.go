// Package host is kube-aws's side of the plugin platform: it launches the
// candidates plugins/source resolved as hashicorp/go-plugin subprocesses
// speaking gRPC (Launch), after source's check against plugins.lock;
// registers them, runs their stages with timeouts (Plugin.Run), serves them
// the Host services (events and a persistent key-value store, Store) and
// makes sure no plugin process outlives kube-aws (Kill, KillAll,
// CleanupOnSignal, and Pdeathsig on Linux).
//
// The package speaks core types only; plugins/protocol converts them to and
// from the wire.
package host
