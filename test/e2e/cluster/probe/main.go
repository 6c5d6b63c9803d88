// Command probe is the workload TestCluster runs as a pod on each node pool:
// it checks from inside the pod network what a user's pod needs of the
// cluster (the cluster's DNS resolves kubernetes.default, the API answers
// through the service IP with the pod's service-account token) and says what
// it found in its termination message, which the test reads from the pod's
// status (no kubelet connection needed). With PROBE_ENV set it also reports
// that variable's value, exactly, so the test can compare a Helm value that
// reached the pod.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"

type report struct {
	Resolved []string `json:"resolved"`
	API      int      `json:"api"`
	Value    *string  `json:"value,omitempty"`
	Err      string   `json:"error,omitempty"`
}

func main() {
	var r report
	var errs []string
	name := "kubernetes.default.svc." + envOr("PROBE_CLUSTER_DOMAIN", "cluster.local")
	// The DNS add-on may still be starting: retry for a while.
	deadline := time.Now().Add(60 * time.Second)
	for {
		addrs, err := net.LookupHost(name)
		if err == nil {
			r.Resolved = addrs
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, "resolving "+name+": "+err.Error())
			break
		}
		time.Sleep(time.Second)
	}
	if code, err := callAPI(); err != nil {
		errs = append(errs, err.Error())
	} else {
		r.API = code
	}
	if k := os.Getenv("PROBE_ENV"); k != "" {
		v, ok := os.LookupEnv(k)
		if ok {
			r.Value = &v
		} else {
			errs = append(errs, "no variable "+k)
		}
	}
	r.Err = strings.Join(errs, "; ")
	b, _ := json.Marshal(r)
	_ = os.WriteFile("/dev/termination-log", b, 0o644)
	fmt.Println(string(b))
	if r.Err != "" {
		os.Exit(1)
	}
}

// callAPI asks the API server for /api through the service IP the kubelet
// gives every pod, authenticated by the pod's token.
func callAPI() (int, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" {
		return 0, fmt.Errorf("no KUBERNETES_SERVICE_HOST in the pod's environment")
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return 0, err
	}
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return 0, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "kubernetes.default.svc"}}}
	req, err := http.NewRequest("GET", "https://"+net.JoinHostPort(host, port)+"/api", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET /api through %s: %w", host, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
