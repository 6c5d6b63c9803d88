package podidentitywebhook

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CacheTTL is how long a service account read from the API server is
// used: a burst of pods of one Deployment reads it once, and an annotation
// added or changed counts for pods created a few seconds later.
const CacheTTL = 5 * time.Second

// Cache reads service accounts through the API server and keeps each
// answer, a missing service account included, for TTL. A failed read is
// not kept.
type Cache struct {
	Kube kubernetes.Interface
	TTL  time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	sa *corev1.ServiceAccount
	at time.Time
}

// Get implements ServiceAccounts.
func (c *Cache) Get(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	key := namespace + "/" + name
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now().Sub(e.at) < c.TTL {
		return e.sa, nil
	}
	sa, err := c.Kube.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sa, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]cached{}
	}
	// Entries of service accounts no pod is created with any more go on
	// the next write: the map holds at most the last TTL's.
	for k, old := range c.entries {
		if now().Sub(old.at) >= c.TTL {
			delete(c.entries, k)
		}
	}
	c.entries[key] = cached{sa: sa, at: now()}
	c.mu.Unlock()
	return sa, nil
}
