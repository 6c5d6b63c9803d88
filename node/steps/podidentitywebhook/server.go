package podidentitywebhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// maxReview bounds a request's body: an AdmissionReview holds one pod, and
// the API server refuses objects above 1.5 MiB.
const maxReview = 4 << 20

// Handler serves POST /mutate: an AdmissionReview v1 in, the Mutator's
// answer out; and GET /healthz, 200 once ready says the webhook is in
// service (its configuration made current), which the controller's add-ons
// step waits for before it installs any release: a pod created before then
// would start without its role.
func Handler(m *Mutator, ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "the webhook configuration is not current yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST /mutate", func(w http.ResponseWriter, r *http.Request) {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			http.Error(w, "want Content-Type application/json", http.StatusUnsupportedMediaType)
			return
		}
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(io.LimitReader(r.Body, maxReview)).Decode(&in); err != nil {
			http.Error(w, "not an AdmissionReview: "+err.Error(), http.StatusBadRequest)
			return
		}
		if in.Request == nil {
			http.Error(w, "an AdmissionReview without a request", http.StatusBadRequest)
			return
		}
		b, err := json.Marshal(m.Review(r.Context(), &in))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	return mux
}

// Serve serves h over TLS on ln with the certificates getCert gives until
// ctx ends, then lets the requests in flight finish (a few seconds).
func Serve(ctx context.Context, ln net.Listener, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
