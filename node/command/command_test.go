package command

import (
	"context"
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
