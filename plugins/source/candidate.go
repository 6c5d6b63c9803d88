package source

// Kind says where a plugin was found.
type Kind string

const (
	// Builtin plugins ship with kube-aws and are on by default.
	Builtin Kind = "builtin"
	// Contrib plugins ship with kube-aws and are off until enabled.
	Contrib Kind = "contrib"
	// User plugins live beside cluster.yaml or in a --plugin-dir.
	User Kind = "user"
	// OCI plugins come from an OCI registry: cluster.yaml names them with
	// plugins.<name>.source, and they run from kube-aws's plugin cache
	// (plugins/oci/cache) once installed and pinned in plugins.lock.
	OCI Kind = "oci"
)

// Candidate is a plugin executable found on disk, not yet started.
type Candidate struct {
	Name string `json:"name"`
	// Path is the executable, absolute.
	Path string `json:"path"`
	// Dir is the folder holding the executable.
	Dir    string `json:"dir"`
	Source Kind   `json:"source"`
	// Problem says why the candidate cannot be started (a plugin folder
	// without its executable, a file that is not executable); "" when it
	// can. Only an enabled plugin needs an executable, so whether a
	// problem is an error is for the caller to decide.
	Problem string `json:"problem,omitempty"`
}
