package retry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var fast = Policy{Initial: time.Millisecond, Max: 4 * time.Millisecond, Factor: 2}

func TestDo(t *testing.T) {
	transient := errors.New("not yet")
	tests := []struct {
		name     string
		policy   Policy
		results  []error // what fn returns on each call; then nil
		timeout  time.Duration
		calls    int
		wantErr  string
		retries  int
		maxDelay time.Duration
	}{
		{name: "first try", policy: fast, results: nil, calls: 1},
		{name: "after retries", policy: fast, results: []error{transient, transient, transient}, calls: 4, retries: 3},
		{name: "permanent stops at once", policy: fast, results: []error{transient, Permanent(errors.New("bad hash"))}, calls: 2, wantErr: "bad hash", retries: 1},
		{name: "attempts used up", policy: Policy{Initial: time.Millisecond, Factor: 2, Attempts: 3}, results: []error{transient, transient, transient, transient}, calls: 3, wantErr: "not yet (3 attempts in", retries: 2},
		{name: "single attempt keeps the error as is", policy: Policy{Attempts: 1}, results: []error{transient}, calls: 1, wantErr: "not yet", retries: 0},
		{name: "timeout", policy: fast, results: repeat(transient, 1000), timeout: 30 * time.Millisecond, wantErr: "timed out"},
		{name: "delays capped", policy: Policy{Initial: time.Millisecond, Max: 3 * time.Millisecond, Factor: 10}, results: repeat(transient, 5), calls: 6, retries: 5, maxDelay: 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			calls, retries := 0, 0
			var lastDelay time.Duration
			err := Do(ctx, tt.policy, func(context.Context) error {
				calls++
				if calls <= len(tt.results) {
					return tt.results[calls-1]
				}
				return nil
			}, func(attempt int, err error, d time.Duration) {
				retries++
				if attempt != retries || err == nil {
					t.Errorf("onRetry(%d, %v) on retry %d", attempt, err, retries)
				}
				if d < lastDelay && tt.maxDelay == 0 {
					t.Errorf("delay shrank: %s after %s", d, lastDelay)
				}
				if tt.maxDelay > 0 && d > tt.maxDelay {
					t.Errorf("delay %s over the cap %s", d, tt.maxDelay)
				}
				lastDelay = d
			})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.calls > 0 && calls != tt.calls {
				t.Errorf("fn called %d times, want %d", calls, tt.calls)
			}
			if tt.timeout == 0 && retries != tt.retries {
				t.Errorf("onRetry called %d times, want %d", retries, tt.retries)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("x")
	p := Permanent(base)
	if !IsPermanent(p) || !errors.Is(p, base) || IsPermanent(base) || Permanent(nil) != nil {
		t.Error("Permanent does not mark, unwrap or pass nil")
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// An attempt that the timeout cuts short (a request cancelled mid-flight)
// says nothing of what was awaited: the error is the attempt's before it.
// A first attempt cut short has nothing before it and is returned as is.
func TestDoReportsWhatWasAwaitedWhenTheTimeoutCutsAnAttempt(t *testing.T) {
	for _, tc := range []struct {
		name, want, not string
		first           bool
	}{
		{name: "after attempts that said why", want: "no volume is free: vol-1 (", not: "deadline"},
		{name: "a first attempt cut short", first: true, want: "describing volumes: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
			defer cancel()
			calls := 0
			err := Do(ctx, fast, func(ctx context.Context) error {
				calls++
				if tc.first || time.Until(deadline(ctx)) < 15*time.Millisecond {
					<-ctx.Done() // a request in flight when the timeout ends
					return fmt.Errorf("describing volumes: %w", ctx.Err())
				}
				return errors.New("no volume is free: vol-1")
			}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.not != "" && strings.Contains(err.Error(), tc.not)) {
				t.Fatalf("err = %v after %d calls, want %q", err, calls, tc.want)
			}
		})
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
