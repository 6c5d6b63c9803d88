package blob_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/blob"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

func TestFetch(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
	st := e.Store
	ctx := t.Context()
	body := []byte("kubelet binary")
	sum := nodeplan.SHA256Hex(body)
	key := e.Settings.Key(nodeplan.AssetKey(sum))
	if err := st.Put(ctx, key, body, "application/octet-stream"); err != nil {
		t.Fatal(err)
	}
	var hits, flaky atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			hits.Add(1)
			w.Write(body)
		case "/flaky":
			if flaky.Add(1) < 3 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	p, err := st.Fetch(ctx, blob.Source{Key: key, SHA256: sum})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(body) || filepath.Base(p) != sum {
		t.Errorf("fetched %s: %q", p, b)
	}
	// Cached: the URL is never asked.
	if _, err := st.Fetch(ctx, blob.Source{URL: srv.URL + "/ok", SHA256: sum}); err != nil || hits.Load() != 0 {
		t.Errorf("cached fetch: %v, %d requests", err, hits.Load())
	}
	os.Remove(p)
	if _, err := st.Fetch(ctx, blob.Source{URL: srv.URL + "/ok", SHA256: sum}); err != nil || hits.Load() != 1 {
		t.Errorf("URL fetch: %v", err)
	}

	other := strings.Repeat("a", 64)
	tests := []struct {
		name      string
		src       blob.Source
		want      string
		permanent bool
	}{
		{"wrong sha from S3", blob.Source{Key: key, SHA256: other}, "has sha256 " + sum + ", the plan says " + other, true},
		{"wrong sha from URL", blob.Source{URL: srv.URL + "/ok", SHA256: other}, "is not what kube-aws rendered", true},
		{"missing object", blob.Source{Key: e.Settings.Key(nodeplan.AssetKey(other)), SHA256: other}, "NoSuchKey", true},
		{"404", blob.Source{URL: srv.URL + "/gone", SHA256: other}, "HTTP 404", true},
		{"503", blob.Source{URL: srv.URL + "/flaky", SHA256: other}, "HTTP 503", false},
		{"not a sha", blob.Source{URL: srv.URL + "/ok", SHA256: "abc"}, "not a sha256", true},
	}
	for _, tt := range tests {
		_, err := st.Fetch(ctx, tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) || retry.IsPermanent(err) != tt.permanent {
			t.Errorf("%s: %v (permanent %v)", tt.name, err, retry.IsPermanent(err))
		}
		if _, err := os.Stat(filepath.Join(st.CacheDir, other)); err == nil {
			t.Errorf("%s: a wrong download was kept", tt.name)
		}
	}
	// With retries a flaky server gets there.
	err = retry.Do(ctx, retry.Policy{Initial: 1e6, Factor: 1, Attempts: 5}, func(ctx context.Context) error {
		_, err := st.Fetch(ctx, blob.Source{URL: srv.URL + "/flaky", SHA256: sum})
		return err
	}, nil)
	if err != nil {
		t.Errorf("flaky: %v", err)
	}
	entries, _ := os.ReadDir(st.CacheDir)
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".download") {
			t.Errorf("temporary file left: %s", en.Name())
		}
	}

	got, err := st.GetVerified(ctx, key, sum, 100)
	if err != nil || string(got) != string(body) {
		t.Errorf("GetVerified: %q %v", got, err)
	}
	if _, err := st.GetVerified(ctx, key, other, 100); !retry.IsPermanent(err) {
		t.Errorf("GetVerified wrong sum: %v", err)
	}
	if _, err := st.Get(ctx, key, 3); err == nil || !strings.Contains(err.Error(), "larger than 3 bytes") {
		t.Errorf("Get over the limit: %v", err)
	}
}
