package registrytest

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// The pinned tools build from the module proxy and run (`make test-tools`
// runs this first, with a long timeout, so the suite does not pay for it).
func TestTools(t *testing.T) {
	for _, tool := range []Tool{Distribution, Cosign} {
		p := tool.MustPath(t)
		out, err := exec.Command(p, "--version").CombinedOutput()
		if tool == Cosign {
			out, err = exec.Command(p, "version").CombinedOutput()
		}
		if err != nil || !strings.Contains(string(out), strings.TrimPrefix(tool.Version, "v")) {
			t.Errorf("%s: %v\n%s", p, err, out)
		}
	}
}

// A registry serves, stops (refusing connections) and comes back on the
// same address with its content.
func TestRegistryStopAndRestart(t *testing.T) {
	r := Start(t, Options{})
	get := func() error {
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if err := get(); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("stopped registry: %v", err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	r.Stop()
}
