// Package faultproxy is an HTTP proxy on 127.0.0.1 in front of moto that
// injects the faults moto cannot produce: throttling, a stack that failed and
// rolled back (with the failed resource in its events), and connections cut
// in the middle of a deploy. Faults are injected at the HTTP layer, so the
// code under test runs its real AWS SDK clients, retries and waiters.
//
// Requests are recognised by their AWS API action: the form field Action of
// query-protocol services (CloudFormation, Auto Scaling, EC2), the
// X-Amz-Target header of JSON services (KMS), or "S3:<METHOD>" for S3.
package faultproxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Fault is what a Rule does to a matching request.
type Fault int

const (
	// Throttle answers with the Throttling error AWS returns when a caller
	// exceeds a rate limit; the AWS SDK retries it.
	Throttle Fault = iota + 1
	// Drop closes the connection without an answer, as when the network
	// fails or kube-aws is killed while waiting.
	Drop
	// Delay holds the request for Rule.Delay, then forwards it: a slow
	// service, to make two runs overlap.
	Delay
)

// Rule injects Fault into requests for Action (and, when set, for the stack
// named StackName). The first Skip matches pass untouched; then Times matches
// get the fault (a negative Times: every later match, until Clear).
type Rule struct {
	Action    string
	StackName string
	Skip      int
	Times     int
	Fault     Fault
	Delay     time.Duration
}

// Proxy forwards to a target (moto) and injects faults.
type Proxy struct {
	// URL is the proxy's own address, to give to clients as the endpoint.
	URL string

	target *url.URL
	srv    *http.Server
	ln     net.Listener
	client *http.Client

	mu      sync.Mutex
	rules   []*ruleState
	failed  map[string]stackFailure
	counts  map[string]int
	faulted map[string]int
}

type ruleState struct {
	Rule
	seen int
}

type stackFailure struct {
	logicalID, resourceType, reason string
	update                          bool
	// active is false for an update failure until the update is executed.
	active bool
}

// Start starts a proxy on a free port of 127.0.0.1 in front of target.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: bad target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listening on 127.0.0.1: %w", err)
	}
	p := &Proxy{
		URL:     "http://" + ln.Addr().String(),
		target:  u,
		ln:      ln,
		client:  &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}},
		failed:  map[string]stackFailure{},
		counts:  map[string]int{},
		faulted: map[string]int{},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// Add installs a rule.
func (p *Proxy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &ruleState{Rule: r})
}

// ThrottleN makes the next n requests for action fail with Throttling.
func (p *Proxy) ThrottleN(action string, n int) {
	p.Add(Rule{Action: action, Times: n, Fault: Throttle})
}

// FailStack makes CloudFormation report the stack as failed: once it exists,
// DescribeStacks says ROLLBACK_COMPLETE, and DescribeStackEvents lists the
// resource logicalID of resourceType as CREATE_FAILED with reason, followed
// by the rollback. The fault lasts until a DeleteStack of the stack passes
// through the proxy, as a real failed stack stays failed until deleted.
func (p *Proxy) FailStack(stackName, logicalID, resourceType, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[stackName] = stackFailure{logicalID, resourceType, reason, false, true}
}

// FailUpdate makes CloudFormation report the stack's last update as failed
// and rolled back: DescribeStacks says UPDATE_ROLLBACK_COMPLETE instead of
// UPDATE_COMPLETE, and DescribeStackEvents lists the resource as
// UPDATE_FAILED with reason. The fault starts once the next update of the
// stack (ExecuteChangeSet or UpdateStack) has passed through, and lasts until
// the one after begins (CreateChangeSet or UpdateStack): the rerun.
func (p *Proxy) FailUpdate(stackName, logicalID, resourceType, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[stackName] = stackFailure{logicalID, resourceType, reason, true, false}
}

// Clear removes every rule and stack failure.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	p.failed = map[string]stackFailure{}
}

// Count returns how many requests for action reached the proxy.
func (p *Proxy) Count(action string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[action]
}

// Faulted returns how many requests for action got a fault.
func (p *Proxy) Faulted(action string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faulted[action]
}

// request is what the proxy learnt about one AWS call.
type request struct {
	action string
	form   url.Values
}

func classify(r *http.Request, body []byte) request {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if i := strings.LastIndex(t, "."); i >= 0 {
			t = t[i+1:]
		}
		return request{action: t}
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
			return request{action: form.Get("Action"), form: form}
		}
	}
	return request{action: "S3:" + r.Method}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req := classify(r, body)
	stack := req.form.Get("StackName")

	p.mu.Lock()
	p.counts[req.action]++
	var fault Fault
	var delay time.Duration
	for _, rule := range p.rules {
		if rule.Action != req.action || (rule.StackName != "" && rule.StackName != stack) {
			continue
		}
		rule.seen++
		if rule.seen <= rule.Skip {
			continue
		}
		if rule.Times >= 0 && rule.seen > rule.Skip+rule.Times {
			continue
		}
		fault, delay = rule.Fault, rule.Delay
		p.faulted[req.action]++
		break
	}
	failure, failedStack := p.failed[stack]
	switch {
	case !failedStack:
	case req.action == "DeleteStack",
		failure.update && failure.active && (req.action == "CreateChangeSet" || req.action == "UpdateStack"):
		delete(p.failed, stack)
		failedStack = false
	case failure.update && !failure.active && (req.action == "ExecuteChangeSet" || req.action == "UpdateStack"):
		failure.active = true
		p.failed[stack] = failure
	}
	failedStack = failedStack && failure.active
	// DescribeStacks may list every stack (no StackName): it needs every
	// active failure.
	var active map[string]stackFailure
	if req.action == "DescribeStacks" {
		active = map[string]stackFailure{}
		for name, f := range p.failed {
			if f.active {
				active[name] = f
			}
		}
	}
	p.mu.Unlock()

	switch fault {
	case Throttle:
		w.Header().Set("Content-Type", "text/xml")
		if strings.HasPrefix(req.action, "S3:") {
			// S3 throttles with 503 SlowDown (and HEAD has no body).
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>faultproxy-throttle</RequestId></ErrorResponse>`)
		return
	case Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case Delay:
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}

	status, header, respBody, err := p.forward(r, body)
	if err != nil {
		http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	if status == http.StatusOK {
		switch {
		case req.action == "DescribeStacks" && len(active) > 0:
			respBody = failDescribeStacks(respBody, active)
		case req.action == "DescribeStackEvents" && failedStack:
			respBody = failEvents(respBody, stack, failure)
		}
	}
	for k, vs := range header {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(respBody)))
	w.WriteHeader(status)
	_, _ = w.Write(respBody)
}

func (p *Proxy) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	u := *p.target
	u.Path = r.URL.Path
	u.RawPath = r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Accept-Encoding") {
			continue // the proxy rewrites bodies: ask for them uncompressed
		}
		out.Header[k] = vs
	}
	// Keep the Host the client signed; moto does not check signatures but
	// S3 uses Host to tell path-style from virtual-hosted requests.
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	resp, err := p.client.Do(out)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// failDescribeStacks turns the failed stacks' finished creates (or
// updates) into rolled-back ones, as CloudFormation reports a stack whose
// resource failed. The body is cut at each <StackName>: in the Stack shape
// StackName comes before StackStatus, and nothing nested has either.
func failDescribeStacks(b []byte, failed map[string]stackFailure) []byte {
	const tag = "<StackName>"
	parts := strings.Split(string(b), tag)
	for i := 1; i < len(parts); i++ {
		name, _, _ := strings.Cut(parts[i], "</StackName>")
		f, ok := failed[name]
		if !ok {
			continue
		}
		if f.update {
			parts[i] = strings.Replace(parts[i], "<StackStatus>UPDATE_COMPLETE</StackStatus>",
				"<StackStatus>UPDATE_ROLLBACK_COMPLETE</StackStatus>", 1)
			continue
		}
		for _, st := range []string{"CREATE_COMPLETE", "CREATE_IN_PROGRESS"} {
			parts[i] = strings.Replace(parts[i], "<StackStatus>"+st+"</StackStatus>",
				"<StackStatus>ROLLBACK_COMPLETE</StackStatus><StackStatusReason>The following resource(s) failed to create: ["+xmlEscape(f.logicalID)+"].</StackStatusReason>", 1)
		}
	}
	return []byte(strings.Join(parts, tag))
}

// failEvents puts the failure and rollback events, newest first as AWS
// lists them, before the events moto recorded.
func failEvents(b []byte, stack string, f stackFailure) []byte {
	s := string(b)
	i := strings.Index(s, "<StackEvents>")
	if i < 0 {
		return b
	}
	i += len("<StackEvents>")
	now := time.Now().UTC()
	ev := func(n int, logical, typ, status, reason string) string {
		return fmt.Sprintf(`<member><EventId>faultproxy-%d</EventId><StackName>%s</StackName><LogicalResourceId>%s</LogicalResourceId><ResourceType>%s</ResourceType><Timestamp>%s</Timestamp><ResourceStatus>%s</ResourceStatus><ResourceStatusReason>%s</ResourceStatusReason></member>`,
			n, stack, logical, typ, now.Add(time.Duration(n)*time.Millisecond).Format(time.RFC3339Nano), status, xmlEscape(reason))
	}
	if f.update {
		inject := ev(3, stack, "AWS::CloudFormation::Stack", "UPDATE_ROLLBACK_COMPLETE", "") +
			ev(2, stack, "AWS::CloudFormation::Stack", "UPDATE_ROLLBACK_IN_PROGRESS", "The following resource(s) failed to update: ["+f.logicalID+"].") +
			ev(1, f.logicalID, f.resourceType, "UPDATE_FAILED", f.reason) +
			ev(0, stack, "AWS::CloudFormation::Stack", "UPDATE_IN_PROGRESS", "User Initiated")
		return []byte(s[:i] + inject + s[i:])
	}
	inject := ev(3, stack, "AWS::CloudFormation::Stack", "ROLLBACK_COMPLETE", "") +
		ev(2, f.logicalID, f.resourceType, "DELETE_COMPLETE", "") +
		ev(1, stack, "AWS::CloudFormation::Stack", "ROLLBACK_IN_PROGRESS", "The following resource(s) failed to create: ["+f.logicalID+"]. Rollback requested by user.") +
		ev(0, f.logicalID, f.resourceType, "CREATE_FAILED", f.reason)
	return []byte(s[:i] + inject + s[i:])
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
