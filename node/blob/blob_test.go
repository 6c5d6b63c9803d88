package blob_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// Install streams a download straight to its destination: nothing goes
// to the cache, a wrong download leaves no file (old or new) changed, and
// a copy already in the cache is used instead of downloading.
func TestInstall(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
	st := e.Store
	ctx := t.Context()
	body := []byte("kubelet binary")
	sum := nodeplan.SHA256Hex(body)
	key := e.Settings.Key(nodeplan.AssetKey(sum))
	if err := st.Put(ctx, key, body, "application/octet-stream"); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(body)
	}))
	defer srv.Close()
	dir := t.TempDir()
	other := strings.Repeat("a", 64)
	tests := []struct {
		name string
		src  blob.Source
		old  string // the file at dest before, "" for none
		want string // error, "" for installed
	}{
		{name: "from S3", src: blob.Source{Key: key, SHA256: sum}},
		{name: "from a URL over an old file", src: blob.Source{URL: srv.URL, SHA256: sum}, old: "old kubelet"},
		{name: "wrong sha", src: blob.Source{URL: srv.URL, SHA256: other}, old: "old kubelet", want: "is not what kube-aws rendered"},
		{name: "missing object", src: blob.Source{Key: e.Settings.Key(nodeplan.AssetKey(other)), SHA256: other}, want: "NoSuchKey"},
		{name: "not a sha", src: blob.Source{URL: srv.URL, SHA256: "abc"}, want: "not a sha256"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(dir, "bin", fmt.Sprintf("kubelet%d", i))
			if tt.old != "" {
				os.MkdirAll(filepath.Dir(dest), 0o755)
				os.WriteFile(dest, []byte(tt.old), 0o644)
			}
			err := st.Install(ctx, tt.src, dest, 0o750)
			b, _ := os.ReadFile(dest)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !retry.IsPermanent(err) {
					t.Fatalf("err = %v, want %q (permanent)", err, tt.want)
				}
				if string(b) != tt.old {
					t.Errorf("dest = %q after a failed install, want %q", b, tt.old)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(dest)
			if string(b) != string(body) || fi.Mode().Perm() != 0o750 {
				t.Errorf("dest = %q, mode %v", b, fi.Mode())
			}
		})
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "bin"))
	for _, en := range entries {
		if strings.Contains(en.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", en.Name())
		}
	}
	if _, ok := st.Cached(sum); ok {
		t.Error("an installed download was also written to the cache")
	}
	// In the cache: copied from there, nothing downloaded.
	if _, err := st.Fetch(ctx, blob.Source{Key: key, SHA256: sum}); err != nil {
		t.Fatal(err)
	}
	before := hits.Load()
	dest := filepath.Join(dir, "bin", "cached")
	if err := st.Install(ctx, blob.Source{URL: srv.URL, SHA256: sum}, dest, 0o755); err != nil || hits.Load() != before {
		t.Errorf("install from the cache: %v, %d downloads", err, hits.Load()-before)
	}
	if b, _ := os.ReadFile(dest); string(b) != string(body) {
		t.Errorf("installed from the cache: %q", b)
	}
}

// Fetches of one sha256 at once share one download (the members of one
// archive, installed side by side).
func TestFetchConcurrent(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
	body := []byte("cni plugins archive")
	sum := nodeplan.SHA256Hex(body)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(body)
	}))
	defer srv.Close()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Store.Fetch(t.Context(), blob.Source{URL: srv.URL, SHA256: sum})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || hits.Load() != 1 {
		t.Errorf("5 fetches at once: %v, %d downloads, want 1", err, hits.Load())
	}
}

// Stream reads from the bucket or a URL; a missing object or a 404 is
// permanent, and nothing is written to the cache.
func TestStreamSources(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
	st := e.Store
	ctx := t.Context()
	body := []byte(strings.Repeat("image archive ", 1000))
	sum := nodeplan.SHA256Hex(body)
	key := e.Settings.Key(nodeplan.AssetKey(sum))
	if err := st.Put(ctx, key, body, "application/octet-stream"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	for _, src := range []blob.Source{{Key: key, SHA256: sum}, {URL: srv.URL + "/ok", SHA256: sum}} {
		s, err := st.Stream(ctx, src, 512)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := io.ReadAll(s)
		s.Close()
		if err != nil || string(got) != string(body) {
			t.Errorf("%s: %d bytes, %v", src, len(got), err)
		}
	}
	for _, src := range []blob.Source{{Key: key + "-missing", SHA256: sum}, {URL: srv.URL + "/missing", SHA256: sum}, {Key: key, SHA256: "abc"}} {
		if _, err := st.Stream(ctx, src, 512); err == nil || !retry.IsPermanent(err) {
			t.Errorf("%s: err = %v, want a permanent error", src, err)
		}
	}
	if entries, _ := os.ReadDir(st.CacheDir); len(entries) != 0 {
		t.Errorf("streaming wrote %d files to the cache", len(entries))
	}
}
