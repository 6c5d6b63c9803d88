package awstest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStartServerAnswersAndStops(t *testing.T) {
	url, stop, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("moto must listen on 127.0.0.1 only, got %s", url)
	}
	if err := Reset(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	if cpu, err := CPUTime(url); err != nil || cpu <= 0 {
		t.Fatalf("moto CPU time %v %v", cpu, err)
	}
	stop()
	stop() // a second stop must be harmless
	c := &http.Client{Timeout: time.Second}
	if _, err := c.Get(url + "/moto-api/"); err == nil {
		t.Fatalf("moto still answers on %s after stop", url)
	}
}

func TestMissingVenvSaysWhatToDo(t *testing.T) {
	t.Setenv("KUBE_AWS_VENV", t.TempDir())
	t.Chdir(t.TempDir()) // no go.mod above: the repo fallback finds nothing
	_, err := PythonPath()
	if err == nil || !strings.Contains(err.Error(), "make venv") {
		t.Fatalf("want an error telling to run make venv, got %v", err)
	}
	if errors.Unwrap(err) != nil {
		t.Fatalf("unexpected wrapped error %v", err)
	}
}
