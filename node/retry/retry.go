// Package retry runs a step again, with exponential backoff, while it fails
// for reasons that pass (an API server still starting, S3 or IMDS not yet
// reachable at boot, two controllers installing the same release at once),
// and stops at once on a failure that will not (a wrong hash, a bad plan).
// The delays are apimachinery's wait.Backoff.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Policy says how often and how long to try.
type Policy struct {
	// Initial is the first delay; each next one is Factor times longer,
	// up to Max, plus up to Jitter of itself at random.
	Initial time.Duration
	Max     time.Duration
	Factor  float64
	Jitter  float64
	// Attempts bounds the tries; 0 tries until the context ends.
	Attempts int
}

// Boot is the policy of a step at boot: quick first retries, then every
// 15 s, until the step's context (its timeout) ends.
var Boot = Policy{Initial: 500 * time.Millisecond, Max: 15 * time.Second, Factor: 2, Jitter: 0.2}

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one that retrying cannot fix: Do returns it at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Do calls fn until it succeeds, returns a Permanent error, the attempts are
// used up or ctx ends. Before each retry it calls onRetry (if not nil) with
// the failed attempt's number, its error and the delay, so the caller can
// say what it is waiting for. The error it returns is fn's last, saying how
// many attempts were made when there was more than one; when ctx ended in
// the middle of that attempt, it is the attempt's before, which says what
// was being waited for ("no volume is free: ...") where the cut one only says
// that a request was cancelled.
func Do(ctx context.Context, p Policy, fn func(context.Context) error, onRetry func(attempt int, err error, delay time.Duration)) error {
	b := wait.Backoff{Duration: p.Initial, Factor: p.Factor, Jitter: p.Jitter, Steps: 1 << 30, Cap: p.Max}
	start := time.Now()
	var prev error // the last attempt's error that ctx's end did not cause
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if IsPermanent(err) {
			return err
		}
		if ctx.Err() != nil && prev != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			err = prev
		}
		prev = err
		giveUp := func(why string) error {
			if attempt == 1 {
				return err
			}
			return fmt.Errorf("%w (%d attempts in %s%s)", err, attempt, time.Since(start).Round(time.Second), why)
		}
		if p.Attempts > 0 && attempt >= p.Attempts {
			return giveUp("")
		}
		if ctx.Err() != nil {
			return giveUp(", " + cause(ctx))
		}
		delay := b.Step()
		if onRetry != nil {
			onRetry(attempt, err, delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return giveUp(", " + cause(ctx))
		case <-t.C:
		}
	}
}

func cause(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return "timed out"
	}
	return "interrupted"
}
