// Command probe is the workload TestCluster runs as a pod on each node pool:
// it checks from inside the pod network what a user's pod needs of the
// cluster (the cluster's DNS resolves kubernetes.default, the API answers
// through the service IP with the pod's service-account token) and says what
// it found in its termination message, which the test reads from the pod's
// status (no kubelet connection needed). With PROBE_ENV set it also reports
// that variable's value, exactly, so the test can compare a Helm value that
// reached the pod. With PROBE_SERVE set it is instead the web workload of
// the day-2 cases: it answers every HTTP request with 200 and its pod's
// name, and on SIGTERM goes on answering for PROBE_LINGER (5 s) while the
// Service's endpoints catch up, as a well-behaved server does. With
// PROBE_IMDS set (a duration) it instead asks the instance metadata service
// for an IMDSv2 token, giving up after that long, and reports what it got:
// whether a pod can act as its node. With PROBE_AWS set (a duration) it
// instead asks STS who it is through the AWS SDK's default credential chain,
// and reports that with the claims of its web-identity token: whether a pod
// has an IAM role of its own.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"

type report struct {
	Resolved []string    `json:"resolved"`
	API      int         `json:"api"`
	Value    *string     `json:"value,omitempty"`
	IMDS     *imdsReport `json:"imds,omitempty"`
	AWS      *awsReport  `json:"aws,omitempty"`
	Err      string      `json:"error,omitempty"`
}

// imdsReport is what the pod got of the instance metadata service.
type imdsReport struct {
	// Status is the token request's HTTP status; 0 when no reply came.
	Status   int    `json:"status,omitempty"`
	TimedOut bool   `json:"timedOut,omitempty"`
	Error    string `json:"error,omitempty"`
	Millis   int64  `json:"ms"`
	// Role is the instance role the pod could name with a token, and
	// Credentials whether it could read that role's credentials.
	Role        string `json:"role,omitempty"`
	Credentials bool   `json:"credentials,omitempty"`
}

func main() {
	if addr := os.Getenv("PROBE_SERVE"); addr != "" {
		serve(addr)
		return
	}
	if wait := os.Getenv("PROBE_IMDS"); wait != "" {
		d, err := time.ParseDuration(wait)
		if err != nil {
			d = 2 * time.Second
		}
		finish(report{IMDS: askIMDS(d)})
		return
	}
	if wait := os.Getenv("PROBE_AWS"); wait != "" {
		d, err := time.ParseDuration(wait)
		if err != nil {
			d = 30 * time.Second
		}
		finish(report{AWS: whoAmI(d)})
		return
	}
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
	finish(r)
}

// finish writes the report where the test reads it, and fails the pod when
// the report says something failed.
func finish(r report) {
	b, _ := json.Marshal(r)
	_ = os.WriteFile("/dev/termination-log", b, 0o644)
	fmt.Println(string(b))
	if r.Err != "" {
		os.Exit(1)
	}
}

// imdsAddr is the instance metadata service, as on EC2.
const imdsAddr = "http://169.254.169.254"

// askIMDS asks for an IMDSv2 token as an AWS SDK would, giving up after
// wait, and with a token, for the role and its credentials. The pod
// finishes either way: the test judges what it got.
func askIMDS(wait time.Duration) *imdsReport {
	c := &http.Client{Timeout: wait}
	var r imdsReport
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPut, imdsAddr+"/latest/api/token", nil)
	req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
	resp, err := c.Do(req)
	r.Millis = time.Since(start).Milliseconds()
	if err != nil {
		var ne net.Error
		r.TimedOut = errors.As(err, &ne) && ne.Timeout()
		r.Error = err.Error()
		return &r
	}
	tok, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		return &r
	}
	get := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, imdsAddr+path, nil)
		req.Header.Set("X-aws-ec2-metadata-token", string(tok))
		resp, err := c.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	r.Role = get("/latest/meta-data/iam/security-credentials/")
	if r.Role != "" {
		r.Credentials = strings.Contains(get("/latest/meta-data/iam/security-credentials/"+r.Role), `"AccessKeyId"`)
	}
	return &r
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

// serve answers on addr until SIGTERM, then for the linger time more.
func serve(addr string) {
	name, _ := os.Hostname()
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, name)
	})}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-term
		linger, err := time.ParseDuration(envOr("PROBE_LINGER", "5s"))
		if err != nil {
			linger = 5 * time.Second
		}
		time.Sleep(linger)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
