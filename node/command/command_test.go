package command

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestExec(t *testing.T) {
	out, err := Exec(context.Background(), "sh", "-c", "echo out; echo err >&2")
	if err != nil || out != "out\n" {
		t.Fatalf("%q %v", out, err)
	}
	_, err = Exec(context.Background(), "sh", "-c", "echo partial; echo 'no space left' >&2; exit 3")
	if err == nil || err.Error() != "`sh -c echo partial; echo 'no space left' >&2; exit 3`: exit status 3: no space left" || ExitCode(err) != 3 {
		t.Errorf("err = %v (exit %d)", err, ExitCode(err))
	}
	_, err = Exec(context.Background(), "/nonexistent/ctr", "images")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/ctr images") || ExitCode(err) != -1 {
		t.Errorf("missing tool: %v", err)
	}
}

type brokenReader struct{ sent bool }

func (b *brokenReader) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "part of the input\n"), nil
	}
	return 0, errors.New("connection reset by peer")
}

func TestExecInput(t *testing.T) {
	tests := []struct {
		name  string
		stdin io.Reader
		args  []string
		out   string
		err   string
	}{
		{name: "read whole", stdin: strings.NewReader("a\nb\n"), args: []string{"-c", "wc -l"}, out: "2\n"},
		{name: "stops reading early", stdin: strings.NewReader(strings.Repeat("x", 1<<20)), args: []string{"-c", "head -c 3"}, out: "xxx"},
		{name: "fails", stdin: strings.NewReader("in"), args: []string{"-c", "cat >/dev/null; echo bad archive >&2; exit 1"}, err: "exit status 1: bad archive"},
		{name: "input fails", stdin: &brokenReader{}, args: []string{"-c", "cat >/dev/null; echo unexpected EOF >&2; exit 1"}, err: "reading the input of `sh -c cat >/dev/null; echo unexpected EOF >&2; exit 1`: connection reset by peer"},
	}
	for _, tt := range tests {
		out, err := ExecInput(context.Background(), tt.stdin, "sh", tt.args...)
		if tt.err == "" && (err != nil || strings.TrimSpace(out) != strings.TrimSpace(tt.out)) {
			t.Errorf("%s: %q %v", tt.name, out, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}
