package helper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// The helper binary answers over its stdin and stdout: progress lines and
// one result or error.
func TestRunTheHelper(t *testing.T) {
	t.Setenv(helper.EnvPath, plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws-oci"))
	_, err := helper.Run(context.Background(), helper.Request{Op: "nope"}, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown operation "nope"`) {
		t.Errorf("unknown op: %v", err)
	}
	var logs []string
	res, err := helper.Run(context.Background(), helper.Request{Op: helper.OpInstall, CacheDir: t.TempDir(), Platform: "linux/amd64",
		Install: []helper.InstallRequest{{Name: "x", Source: "https://nope"}}}, func(s string) { logs = append(logs, s) })
	if err != nil || len(res.Installed) != 1 || !strings.Contains(res.Installed[0].Error, "plugins.x.source") || res.Installed[0].ErrorField != "source" {
		t.Errorf("bad source: %+v %v", res, err)
	}

	t.Setenv(helper.EnvPath, filepath.Join(t.TempDir(), "missing"))
	if _, err := helper.Run(context.Background(), helper.Request{Op: helper.OpInstall}, nil); err == nil || !strings.Contains(err.Error(), "starting") {
		t.Errorf("missing helper: %v", err)
	}
}

func TestServe(t *testing.T) {
	var out bytes.Buffer
	if code := helper.Serve(strings.NewReader("{not json"), &out, nil); code != 1 || !strings.Contains(out.String(), "reading the request on stdin") {
		t.Errorf("bad request: %d %s", code, out.String())
	}
	out.Reset()
	code := helper.Serve(strings.NewReader(`{"op":"push"}`), &out, func(req helper.Request, progress func(string)) (*helper.Result, error) {
		progress("one")
		if req.Op != "push" {
			return nil, errors.New("wrong op")
		}
		return &helper.Result{Pushed: &helper.PushResult{Name: "hello"}}, nil
	})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"log":"one"`) {
		t.Fatalf("%d %q", code, lines)
	}
	var m struct {
		Result helper.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil || m.Result.Pushed.Name != "hello" {
		t.Errorf("%s %v", lines[1], err)
	}
}
