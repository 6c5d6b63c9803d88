// Package dns is the run network's resolver at the VPC's base address + 2,
// as Amazon's DNS is in a VPC: it answers names of the zones it is given
// (Route 53 hosted zones read from moto, load balancer names, instance
// host names) and refuses every other name, so nothing leaves the run's
// network. Messages are parsed and built with golang.org/x/net's
// dnsmessage.
package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Record is one resource record set.
type Record struct {
	Name   string // fully qualified, any case, with or without the final dot
	Type   dnsmessage.Type
	TTL    uint32
	Values []string // A/AAAA: addresses; CNAME: a name; TXT: strings
}

// Data is what the resolver knows at one moment.
type Data struct {
	Zones   []string // names it is authoritative for
	Records []Record
}

// Backend returns the current data. It is called for every query, so it
// must be cheap (a snapshot the caller refreshes).
type Backend func() Data

// Server answers DNS over UDP and TCP.
type Server struct {
	b  Backend
	wg sync.WaitGroup
}

// New returns a server reading b.
func New(b Backend) *Server { return &Server{b: b} }

func canon(n string) string { return strings.ToLower(strings.TrimSuffix(n, ".")) + "." }

// Answer builds the response to one query message.
func (s *Server) Answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired}
	d := s.b()
	qn := canon(q.Name.String())
	inZone := false
	for _, z := range d.Zones {
		z = canon(z)
		if qn == z || strings.HasSuffix(qn, "."+z) {
			inZone = true
			break
		}
	}
	var answers []Record
	if !inZone {
		// Not ours: refuse rather than forward, so nothing leaves the
		// run's network.
		resp.RCode = dnsmessage.RCodeRefused
	} else {
		resp.Authoritative = true
		answers, resp.RCode = resolve(d.Records, qn, q.Type)
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), resp)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, r := range answers {
		if err := add(&b, r); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// resolve finds the records of name and type t, following CNAMEs within
// the data (at most 8 steps).
func resolve(recs []Record, name string, t dnsmessage.Type) ([]Record, dnsmessage.RCode) {
	var out []Record
	exists := false
	for step := 0; step < 8; step++ {
		var cname *Record
		for i := range recs {
			r := recs[i]
			if canon(r.Name) != name {
				continue
			}
			exists = true
			if r.Type == t {
				r.Name = name
				out = append(out, r)
			} else if r.Type == dnsmessage.TypeCNAME && len(r.Values) > 0 {
				cname = &r
			}
		}
		if len(out) > 0 || cname == nil || t == dnsmessage.TypeCNAME {
			break
		}
		c := *cname
		c.Name = name
		out = append(out, c)
		name = canon(c.Values[0])
	}
	if !exists {
		return nil, dnsmessage.RCodeNameError
	}
	return out, dnsmessage.RCodeSuccess
}

func add(b *dnsmessage.Builder, r Record) error {
	n, err := dnsmessage.NewName(canon(r.Name))
	if err != nil {
		return err
	}
	h := dnsmessage.ResourceHeader{Name: n, Class: dnsmessage.ClassINET, TTL: r.TTL}
	switch r.Type {
	case dnsmessage.TypeA, dnsmessage.TypeAAAA:
		for _, v := range r.Values {
			a, err := netip.ParseAddr(v)
			if err != nil {
				continue
			}
			if a.Is4() && r.Type == dnsmessage.TypeA {
				err = b.AResource(h, dnsmessage.AResource{A: a.As4()})
			} else if a.Is6() && r.Type == dnsmessage.TypeAAAA {
				err = b.AAAAResource(h, dnsmessage.AAAAResource{AAAA: a.As16()})
			}
			if err != nil {
				return err
			}
		}
	case dnsmessage.TypeCNAME:
		t, err := dnsmessage.NewName(canon(r.Values[0]))
		if err != nil {
			return err
		}
		return b.CNAMEResource(h, dnsmessage.CNAMEResource{CNAME: t})
	case dnsmessage.TypeTXT:
		var txt []string
		for _, v := range r.Values {
			txt = append(txt, strings.Trim(v, `"`))
		}
		return b.TXTResource(h, dnsmessage.TXTResource{TXT: txt})
	}
	return nil
}

// ServeUDP answers queries on c until it is closed.
func (s *Server) ServeUDP(c net.PacketConn) error {
	buf := make([]byte, 1500)
	for {
		n, addr, err := c.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		out, err := s.Answer(buf[:n])
		if err != nil {
			continue // not a DNS query: drop it, as a resolver does
		}
		_, _ = c.WriteTo(out, addr)
	}
}

// ServeTCP answers queries on l until it is closed.
func (s *Server) ServeTCP(l net.Listener) error {
	defer s.wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			for {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, q); err != nil {
					return
				}
				out, err := s.Answer(q)
				if err != nil {
					return
				}
				binary.BigEndian.PutUint16(l[:], uint16(len(out)))
				if _, err := c.Write(append(l[:], out...)); err != nil {
					return
				}
			}
		}()
	}
}

// Resolver returns a Go resolver that asks the server at addr through
// dial (how tests query it from inside the run's network).
func Resolver(addr string, dial func(ctx context.Context, network, address string) (net.Conn, error)) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, addr)
	}}
}
