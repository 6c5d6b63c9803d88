package host

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// stderrSink forwards a plugin's output to kube-aws's log one whole line at
// a time, each prefixed "[<plugin>] ", and remembers the last lines and the
// first panic line so that a crash can be reported in one sentence.
//
// A plugin's output reaches kube-aws by two routes (go-plugin's stdio stream
// for what the plugin writes to os.Stdout/os.Stderr after Serve, and the raw
// stderr pipe for runtime crashes and anything before Serve); each route gets
// its own lineWriter so partial lines never interleave, and they share the
// sink's lock.
type stderrSink struct {
	prefix string

	mu    sync.Mutex
	out   io.Writer
	tail  []string
	panic string
}

const tailLines = 20

func newStderrSink(name string, out io.Writer) *stderrSink {
	return &stderrSink{prefix: "[" + name + "] ", out: out}
}

func (s *stderrSink) line(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panic == "" && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")) {
		s.panic = l
	}
	s.tail = append(s.tail, l)
	if len(s.tail) > tailLines {
		s.tail = s.tail[len(s.tail)-tailLines:]
	}
	if s.out != nil {
		_, _ = io.WriteString(s.out, s.prefix+l+"\n")
	}
}

// panicLine is the first "panic: ..." or "fatal error: ..." line seen.
func (s *stderrSink) panicLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.panic
}

// lastLines returns up to n of the last lines.
func (s *stderrSink) lastLines(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tail) > n {
		return append([]string(nil), s.tail[len(s.tail)-n:]...)
	}
	return append([]string(nil), s.tail...)
}

// writer returns a new line-buffering writer into the sink.
func (s *stderrSink) writer() *lineWriter { return &lineWriter{sink: s} }

type lineWriter struct {
	sink *stderrSink
	mu   sync.Mutex
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.sink.line(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// flush emits a last line that had no newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.sink.line(string(w.buf))
		w.buf = nil
	}
}
