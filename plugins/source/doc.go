// Package source decides where kube-aws's plugins come from, and nothing
// else does: which candidates exist (the built-in, contrib and user plugin
// folders, Discover; the plugins cluster.yaml takes from OCI registries,
// Ensure), with what precedence (Resolve: a name found twice is an error,
// never a silent pick; a registry source replaces a built-in or contrib
// plugin of its name; a user folder of a name that has a registry source is
// a configuration error), and what plugins.lock must say (Lockfile: the
// hashes `kube-aws plugins lock` records, the pins installing a registry
// plugin makes, and the check every plugin that is not built in passes
// before it starts).
//
// The plugin host (plugins/host) starts what this package resolved and
// calls Lockfile.CheckBeforeStart; stages plans a run with Resolve; the
// commands only show what it decided. Registry plugins are downloaded and
// their signatures checked by the kube-aws-oci helper (plugins/oci/helper
// starts it): this package links neither the registry client nor sigstore,
// so kube-aws does not either.
package source
