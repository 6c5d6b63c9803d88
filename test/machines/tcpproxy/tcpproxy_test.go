package tcpproxy

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
)

// echoServer answers each line with its own name and the line.
func echoServer(t *testing.T, name string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					fmt.Fprintf(c, "%s:%s\n", name, s.Text())
				}
			}()
		}
	}()
	return l.Addr().String()
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

func ask(t *testing.T, addr, line string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	fmt.Fprintln(c, line)
	r, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(r), err
}

func TestProxy(t *testing.T) {
	a, b, dead := echoServer(t, "a"), echoServer(t, "b"), deadAddr(t)
	cases := []struct {
		name    string
		targets []string
		want    map[string]bool // names that must answer over 6 connections
		fail    bool
	}{
		{"one target", []string{a}, map[string]bool{"a": true}, false},
		{"spread over two", []string{a, b}, map[string]bool{"a": true, "b": true}, false},
		{"a refusing target is skipped", []string{dead, b}, map[string]bool{"b": true}, false},
		{"no target closes the connection", nil, nil, true},
		{"only refusing targets", []string{dead}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p := New(l, func() []string { return tc.targets }, nil)
			go p.Serve()
			defer p.Close()
			got := map[string]bool{}
			for i := 0; i < 6; i++ {
				r, err := ask(t, p.Addr().String(), fmt.Sprint(i))
				if tc.fail {
					if err == nil {
						t.Fatalf("connection %d answered %q, want it closed", i, r)
					}
					continue
				}
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				name, line, _ := strings.Cut(r, ":")
				if line != fmt.Sprint(i) {
					t.Fatalf("answer %q to line %d", r, i)
				}
				got[name] = true
			}
			if !tc.fail && fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("answered by %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCloseEndsOpenConnections: Close must not wait for clients to hang up.
func TestCloseEndsOpenConnections(t *testing.T) {
	a := echoServer(t, "a")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(l, func() []string { return []string{a} }, nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Serve() }()
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintln(c, "x")
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("client connection still open after Close")
	}
}

// TestRetainClosesFlowsToGoneTargets: a connection forwarded to a target
// that left the set is closed at both ends; one to a target that stays is
// untouched; RetainIf keeps what its predicate keeps.
func TestRetainClosesFlowsToGoneTargets(t *testing.T) {
	a, b := echoServer(t, "a"), echoServer(t, "b")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	targets := []string{a}
	p := New(l, func() []string { mu.Lock(); defer mu.Unlock(); return targets }, nil)
	go p.Serve()
	defer p.Close()
	open := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := bufio.NewReader(c)
		fmt.Fprintln(c, "hello")
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		return c, r
	}
	toA, ra := open()
	mu.Lock()
	targets = []string{b}
	mu.Unlock()
	toB, rb := open()
	// Out of the set for new connections, a keeps its open one for as long
	// as keep says so (a deregistered target still running).
	if n := p.RetainIf(func(t string) bool { return t == a || t == b }); n != 0 {
		t.Fatalf("RetainIf closed %d connections, want none", n)
	}
	fmt.Fprintln(toA, "still")
	if r, err := ra.ReadString('\n'); err != nil || r != "a:still\n" {
		t.Fatalf("the connection to a, kept: %q, %v", r, err)
	}
	if n := p.Retain([]string{b}); n != 1 {
		t.Fatalf("Retain closed %d connections, want 1 (the one to a)", n)
	}
	fmt.Fprintln(toA, "again")
	if r, err := ra.ReadString('\n'); err == nil {
		t.Fatalf("the connection to the gone target answered %q, want it closed", r)
	}
	fmt.Fprintln(toB, "again")
	if r, err := rb.ReadString('\n'); err != nil || r != "b:again\n" {
		t.Fatalf("the connection to the kept target: %q, %v", r, err)
	}
}
