// Package helperproc is the small protocol between kube-aws and the helper
// executables it starts for work whose libraries would slow down every
// kube-aws command if kube-aws linked them (the AWS SDK in kube-aws-ops, the
// registry and signature libraries in kube-aws-oci): one JSON request on the
// helper's stdin, then JSON lines on its stdout, any number of progress
// lines and one result or one error. Standard library only.
package helperproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Message is one line a helper writes.
type Message struct {
	Log    string          `json:"log,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Options tune Run.
type Options struct {
	// WaitDelay is how long an interrupted helper may take to stop after
	// SIGINT before it is killed (default 5s).
	WaitDelay time.Duration
}

// Run starts the helper at path, sends req and decodes its result into
// result. progress receives its log lines (may be nil). An error line from
// the helper is returned as an error with its text.
func Run(ctx context.Context, path string, req, result any, progress func(string), opts Options) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if opts.WaitDelay <= 0 {
		opts.WaitDelay = 5 * time.Second
	}
	cmd := exec.CommandContext(ctx, path)
	// Interrupted: ask the helper to stop (and clean up) before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = opts.WaitDelay
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	var got *Message
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var m Message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // not ours (a stray print); the result line decides
		}
		if m.Log != "" {
			if progress != nil {
				progress(m.Log)
			}
			continue
		}
		mm := m
		got = &mm
	}
	werr := cmd.Wait()
	switch {
	case got != nil && got.Error != "":
		return errors.New(got.Error)
	case got != nil && got.Result != nil:
		return json.Unmarshal(got.Result, result)
	case ctx.Err() != nil:
		return ctx.Err()
	case werr != nil:
		return fmt.Errorf("%s: %v: %s", path, werr, strings.TrimSpace(stderr.String()))
	default:
		return fmt.Errorf("%s returned no result: %s", path, strings.TrimSpace(stderr.String()))
	}
}

// Serve is a helper's side: it reads one request from in, calls handle
// with it and a function that sends a progress line, and writes the result
// or the error to out. It returns the process's exit code: 0 when a result
// was written, 1 when an error was.
func Serve(in io.Reader, out io.Writer, name string, handle func(req json.RawMessage, progress func(string)) (any, error)) int {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(m Message) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(m)
	}
	var req json.RawMessage
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		send(Message{Error: fmt.Sprintf("%s: reading the request on stdin: %v (this helper is started by kube-aws, not by hand)", name, err)})
		return 1
	}
	res, err := handle(req, func(line string) { send(Message{Log: line}) })
	if err != nil {
		send(Message{Error: err.Error()})
		return 1
	}
	b, err := json.Marshal(res)
	if err != nil {
		send(Message{Error: err.Error()})
		return 1
	}
	send(Message{Result: b})
	return 0
}
