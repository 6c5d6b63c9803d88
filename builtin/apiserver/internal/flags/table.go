package flags

// spec describes one kube-apiserver flag across the supported versions.
// Minor versions are Kubernetes 1.<minor>; zero means "no bound".
type spec struct {
	// Since is the first minor version that has the flag.
	Since int
	// Deprecated is the first minor version that marks the flag deprecated.
	Deprecated int
	// Removed is the first minor version without the flag.
	Removed int
	// Replacement says what to use instead, for deprecated and removed flags.
	Replacement string
}

// OldestMinor and NewestMinor bound the Kubernetes versions whose flags the
// table below was checked against (kube-apiserver --help of each release).
// 1.34: v1.34.4's --help (the artifact folder's image) no longer has
// apiserver-count and default-watch-cache-size; they are marked removed in
// 1.34, the newest release checked. cloud-provider and cloud-config went in
// 1.33 (kubernetes/kubernetes#130162).
const (
	OldestMinor = 27
	NewestMinor = 34
)

// klogRemoved is the replacement of the klog flags that KEP-2845 deprecated
// in 1.23 and removed in 1.26.
const klogRemoved = "the API server logs to stderr; use --logging-format, --v and --vmodule"

// known is every kube-apiserver flag kube-aws accepts. A flag that is not
// here is fatal in render: a typo in a flag makes the API server exit on the
// controllers, which the operator otherwise only finds by logging in.
var known = map[string]spec{
	// Generic and secure serving.
	"advertise-address":                       {},
	"bind-address":                            {},
	"secure-port":                             {},
	"cert-dir":                                {},
	"tls-cert-file":                           {},
	"tls-private-key-file":                    {},
	"tls-min-version":                         {},
	"tls-cipher-suites":                       {},
	"tls-sni-cert-key":                        {},
	"http2-max-streams-per-connection":        {},
	"permit-port-sharing":                     {},
	"permit-address-sharing":                  {},
	"external-hostname":                       {},
	"cors-allowed-origins":                    {},
	"strict-transport-security-directives":    {},
	"goaway-chance":                           {},
	"livez-grace-period":                      {},
	"shutdown-delay-duration":                 {},
	"shutdown-send-retry-after":               {},
	"shutdown-watch-termination-grace-period": {Since: 27},
	"max-requests-inflight":                   {},
	"max-mutating-requests-inflight":          {},
	"min-request-timeout":                     {},
	"request-timeout":                         {},
	"enable-priority-and-fairness":            {},
	"profiling":                               {},
	"contention-profiling":                    {},
	"debug-socket-path":                       {},
	"enable-logs-handler": {Deprecated: 19,
		Replacement: "read API server logs from the node's journal or with the node log query feature"},
	"enable-aggregator-routing":               {},
	"aggregator-reject-forwarding-redirect":   {},
	"allow-privileged":                        {},
	"apiserver-count":                         {Removed: 34, Replacement: "nothing: --endpoint-reconciler-type=lease (the default) counts API servers by their leases"},
	"endpoint-reconciler-type":                {},
	"event-ttl":                               {},
	"lease-reuse-duration-seconds":            {},
	"default-not-ready-toleration-seconds":    {},
	"default-unreachable-toleration-seconds":  {},
	"delete-collection-workers":               {},
	"enable-garbage-collector":                {},
	"feature-gates":                           {},
	"runtime-config":                          {},
	"service-cluster-ip-range":                {},
	"service-node-port-range":                 {},
	"service-account-issuer":                  {},
	"service-account-jwks-uri":                {},
	"service-account-key-file":                {},
	"service-account-lookup":                  {},
	"service-account-signing-key-file":        {},
	"service-account-max-token-expiration":    {},
	"service-account-extend-token-expiration": {},
	"api-audiences":                           {},
	"egress-selector-config-file":             {},
	"tracing-config-file":                     {},
	"peer-advertise-ip":                       {Since: 28},
	"peer-advertise-port":                     {Since: 28},
	"peer-ca-file":                            {Since: 28},
	"storage-initialization-timeout":          {Since: 30},
	"emulated-version":                        {Since: 31},

	// Admission.
	"enable-admission-plugins":      {},
	"disable-admission-plugins":     {},
	"admission-control-config-file": {},
	"admission-control": {Deprecated: 10,
		Replacement: "--enable-admission-plugins and --disable-admission-plugins"},

	// Authentication.
	"anonymous-auth":                           {},
	"authentication-config":                    {Since: 29},
	"authentication-token-webhook-cache-ttl":   {},
	"authentication-token-webhook-config-file": {},
	"authentication-token-webhook-version":     {},
	"client-ca-file":                           {},
	"enable-bootstrap-token-auth":              {},
	"token-auth-file":                          {},
	"oidc-ca-file":                             {},
	"oidc-client-id":                           {},
	"oidc-groups-claim":                        {},
	"oidc-groups-prefix":                       {},
	"oidc-issuer-url":                          {},
	"oidc-required-claim":                      {},
	"oidc-signing-algs":                        {},
	"oidc-username-claim":                      {},
	"oidc-username-prefix":                     {},
	"requestheader-allowed-names":              {},
	"requestheader-client-ca-file":             {},
	"requestheader-extra-headers-prefix":       {},
	"requestheader-group-headers":              {},
	"requestheader-username-headers":           {},
	"proxy-client-cert-file":                   {},
	"proxy-client-key-file":                    {},

	// Authorization.
	"authorization-mode":                           {},
	"authorization-config":                         {Since: 29},
	"authorization-policy-file":                    {},
	"authorization-webhook-cache-authorized-ttl":   {},
	"authorization-webhook-cache-unauthorized-ttl": {},
	"authorization-webhook-config-file":            {},
	"authorization-webhook-version":                {},

	// Kubelet client.
	"kubelet-certificate-authority":   {},
	"kubelet-client-certificate":      {},
	"kubelet-client-key":              {},
	"kubelet-preferred-address-types": {},
	"kubelet-timeout":                 {},

	// etcd and storage.
	"etcd-servers":                                {},
	"etcd-servers-overrides":                      {},
	"etcd-cafile":                                 {},
	"etcd-certfile":                               {},
	"etcd-keyfile":                                {},
	"etcd-prefix":                                 {},
	"etcd-compaction-interval":                    {},
	"etcd-count-metric-poll-period":               {},
	"etcd-db-metric-poll-interval":                {},
	"etcd-healthcheck-timeout":                    {},
	"etcd-readycheck-timeout":                     {},
	"storage-backend":                             {},
	"storage-media-type":                          {},
	"encryption-provider-config":                  {},
	"encryption-provider-config-automatic-reload": {},
	"watch-cache":                                 {},
	"watch-cache-sizes":                           {},
	"default-watch-cache-size":                    {Removed: 34, Replacement: "nothing: watch cache sizes are automatic; --watch-cache-sizes sets one resource's"},

	// Audit.
	"audit-policy-file":                 {},
	"audit-log-path":                    {},
	"audit-log-format":                  {},
	"audit-log-maxage":                  {},
	"audit-log-maxbackup":               {},
	"audit-log-maxsize":                 {},
	"audit-log-mode":                    {},
	"audit-log-compress":                {},
	"audit-log-batch-buffer-size":       {},
	"audit-log-batch-max-size":          {},
	"audit-log-batch-max-wait":          {},
	"audit-log-truncate-enabled":        {},
	"audit-log-truncate-max-batch-size": {},
	"audit-log-truncate-max-event-size": {},
	"audit-log-version":                 {},
	"audit-webhook-config-file":         {},
	"audit-webhook-initial-backoff":     {},
	"audit-webhook-mode":                {},
	"audit-webhook-batch-buffer-size":   {},
	"audit-webhook-batch-max-size":      {},
	"audit-webhook-batch-max-wait":      {},
	"audit-webhook-version":             {},

	// Logging (component-base).
	"v":                         {},
	"vmodule":                   {},
	"logging-format":            {},
	"log-flush-frequency":       {},
	"log-json-info-buffer-size": {},
	"log-json-split-stream":     {},

	// Cloud provider: kube-aws runs the AWS cloud-controller-manager instead.
	// Deprecated in 1.29 (kubernetes/kubernetes#120903), removed in 1.33
	// (kubernetes/kubernetes#130162): kube-apiserver 1.33 exits on them.
	"cloud-provider": {Deprecated: 29, Removed: 33,
		Replacement: "nothing: the AWS cloud-controller-manager does the cloud's work and the API server needs no cloud provider"},
	"cloud-config": {Deprecated: 29, Removed: 33,
		Replacement: "nothing: configure the AWS cloud-controller-manager instead"},

	// Removed flags, kept so the fatal can say what to use instead.
	"insecure-port":         {Deprecated: 20, Removed: 24, Replacement: "--secure-port (the insecure port is gone)"},
	"insecure-bind-address": {Deprecated: 20, Removed: 24, Replacement: "--bind-address"},
	"port":                  {Deprecated: 20, Removed: 24, Replacement: "--secure-port"},
	"address":               {Deprecated: 20, Removed: 24, Replacement: "--bind-address"},
	"enable-swagger-ui":     {Deprecated: 10, Removed: 14, Replacement: "nothing: the OpenAPI document is always served at /openapi/v2 and /openapi/v3"},
	"experimental-encryption-provider-config": {Deprecated: 13, Removed: 14, Replacement: "--encryption-provider-config"},
	"basic-auth-file":                         {Deprecated: 16, Removed: 19, Replacement: "client certificates, --token-auth-file or OIDC"},
	"alsologtostderr":                         {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"add-dir-header":                          {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"log-backtrace-at":                        {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"log-dir":                                 {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"log-file":                                {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"log-file-max-size":                       {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"logtostderr":                             {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"one-output":                              {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"skip-headers":                            {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"skip-log-headers":                        {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
	"stderrthreshold":                         {Deprecated: 23, Removed: 26, Replacement: klogRemoved},
}
