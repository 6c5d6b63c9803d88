package host

import (
	"fmt"
	"sync"

	"github.com/kube-aws/kube-aws/core/stage"
)

// services is the Host implementation kube-aws serves to one plugin: events
// go to the running stage's callback, the store to the plugin's Store.
type services struct {
	p *Plugin

	mu   sync.Mutex
	emit func(stage.Event) error
}

func (s *services) setEmit(f func(stage.Event) error) {
	s.mu.Lock()
	s.emit = f
	s.mu.Unlock()
}

func (s *services) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emit != nil
}

func (s *services) Emit(ev stage.Event) error {
	s.mu.Lock()
	f := s.emit
	s.mu.Unlock()
	if f != nil {
		return f(ev)
	}
	// Between stages there is no one to hand events to: log them.
	if len(s.p.proc.members) > 1 {
		s.p.proc.sink.line(fmt.Sprintf("%s: %s: %s", s.p.Name, ev.Kind, ev.Message))
	} else {
		s.p.proc.sink.line(fmt.Sprintf("%s: %s", ev.Kind, ev.Message))
	}
	return nil
}

func (s *services) StoreGet(key string) ([]byte, bool, error) { return s.p.store.Get(key) }

func (s *services) StorePut(key string, v []byte) error { return s.p.store.Put(key, v) }

func (s *services) StoreDelete(key string) error { return s.p.store.Delete(key) }

func (s *services) SecretGet(key string) ([]byte, bool, error) {
	return s.p.credentials.Get(s.p.Name, key)
}

func (s *services) SecretPut(key string, v []byte) (string, error) {
	return s.p.credentials.Put(s.p.Name, key, v)
}

func (s *services) StoreList(prefix string) ([]string, error) {
	return s.p.store.List(prefix)
}
