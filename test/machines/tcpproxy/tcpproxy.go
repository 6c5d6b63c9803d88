// Package tcpproxy forwards TCP connections from a listener to one of a
// changing set of targets. The harness uses it twice: to reach moto (on the
// host's loopback) from inside the run's network namespace, and as the
// load balancer in front of registered instances.
package tcpproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy serves one listener.
type Proxy struct {
	l       net.Listener
	targets func() []string
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	next    atomic.Uint64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	flows   map[*flow]struct{}
	closed  bool
	// DialTimeout bounds the connection to one target before the next is
	// tried.
	DialTimeout time.Duration
}

// New returns a proxy from l to the addresses targets returns at the time
// of each connection, spread round-robin; a target that refuses is skipped
// for the next. dial nil means net.Dialer.
func New(l net.Listener, targets func() []string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Proxy {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return &Proxy{l: l, targets: targets, dial: dial, conns: map[net.Conn]struct{}{}, flows: map[*flow]struct{}{}, DialTimeout: 2 * time.Second}
}

// flow is one forwarded connection: the client's and the target's ends.
type flow struct {
	client, up net.Conn
	target     string
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() net.Addr { return p.l.Addr() }

// Serve accepts connections until Close. It returns nil after Close.
func (p *Proxy) Serve() error {
	for {
		c, err := p.l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) handle(c net.Conn) {
	up, target := p.connect()
	if up == nil {
		return // no target answers: the client sees the connection close
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	f := &flow{client: c, up: up, target: target}
	p.mu.Lock()
	p.flows[f] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.flows, f)
		p.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close so the other side sees EOF and the copy the other
		// way can finish.
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

func (p *Proxy) connect() (net.Conn, string) {
	ts := p.targets()
	if len(ts) == 0 {
		return nil, ""
	}
	start := int(p.next.Add(1) % uint64(len(ts)))
	for i := range ts {
		t := ts[(start+i)%len(ts)]
		ctx, cancel := context.WithTimeout(context.Background(), p.DialTimeout)
		up, err := p.dial(ctx, "tcp", t)
		cancel()
		if err == nil {
			return up, t
		}
	}
	return nil, ""
}

// Retain closes every forwarded connection whose target is not in
// targets, both ends, and returns how many it closed. A load balancer
// calls it when targets leave: a connection to a machine that is gone gets
// no reset from anyone, so without this its client would wait for its own
// timeout (a client that keeps connections alive, client-go's HTTP/2 one,
// would send every later request down it too).
func (p *Proxy) Retain(targets []string) int {
	keep := make(map[string]bool, len(targets))
	for _, t := range targets {
		keep[t] = true
	}
	return p.RetainIf(func(target string) bool { return keep[target] })
}

// RetainIf closes every forwarded connection whose target keep refuses,
// both ends, and returns how many it closed.
func (p *Proxy) RetainIf(keep func(target string) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for f := range p.flows {
		if !keep(f.target) {
			f.client.Close()
			f.up.Close()
			delete(p.flows, f)
			n++
		}
	}
	return n
}

// Close stops accepting, closes every open connection and waits for the
// handlers to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.l.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
