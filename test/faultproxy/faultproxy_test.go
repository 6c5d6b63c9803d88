package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func backend(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(b))
		switch form.Get("Action") {
		case "DescribeStacks":
			member := func(n string) string {
				return `<member><StackName>` + n + `</StackName><Parameters><member><ParameterKey>K</ParameterKey></member></Parameters><StackStatus>CREATE_COMPLETE</StackStatus></member>`
			}
			list := member(form.Get("StackName"))
			if form.Get("StackName") == "" {
				list = member("other") + member("s") + member("third")
			}
			io.WriteString(w, `<DescribeStacksResponse><DescribeStacksResult><Stacks>`+list+`</Stacks></DescribeStacksResult></DescribeStacksResponse>`)
		case "DescribeStackEvents":
			io.WriteString(w, `<DescribeStackEventsResponse><DescribeStackEventsResult><StackEvents></StackEvents></DescribeStackEventsResult></DescribeStackEventsResponse>`)
		default:
			io.WriteString(w, "ok "+r.Method+" "+r.URL.Path)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func call(t *testing.T, p *Proxy, action, stack string) (int, string, error) {
	form := url.Values{"Action": {action}, "StackName": {stack}}
	resp, err := http.Post(p.URL+"/", "application/x-www-form-urlencoded; charset=utf-8", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestRulesAndStackFailure(t *testing.T) {
	p, err := Start(backend(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	p.ThrottleN("CreateStack", 2)
	for i, want := range []int{400, 400, 200} {
		code, body, err := call(t, p, "CreateStack", "s")
		if err != nil || code != want {
			t.Fatalf("call %d: %d %v", i, code, err)
		}
		if code == 400 && !strings.Contains(body, "<Code>Throttling</Code>") {
			t.Fatalf("throttle body %s", body)
		}
	}

	p.Add(Rule{Action: "DescribeStacks", StackName: "s", Skip: 1, Times: 1, Fault: Drop})
	if _, _, err := call(t, p, "DescribeStacks", "s"); err != nil {
		t.Fatalf("skipped call failed: %v", err)
	}
	if _, _, err := call(t, p, "DescribeStacks", "other"); err != nil {
		t.Fatalf("other stack affected: %v", err)
	}
	if _, _, err := call(t, p, "DescribeStacks", "s"); err == nil {
		t.Fatal("want the connection dropped")
	}
	if _, _, err := call(t, p, "DescribeStacks", "s"); err != nil {
		t.Fatalf("drop outlived Times: %v", err)
	}

	p.FailStack("s", "Group", "AWS::AutoScaling::AutoScalingGroup", "limit <exceeded>")
	_, body, _ := call(t, p, "DescribeStacks", "s")
	if !strings.Contains(body, "ROLLBACK_COMPLETE") {
		t.Fatalf("DescribeStacks not failed: %s", body)
	}
	_, body, _ = call(t, p, "DescribeStacks", "")
	if strings.Count(body, "ROLLBACK_COMPLETE") != 1 || strings.Count(body, "CREATE_COMPLETE") != 2 ||
		!strings.Contains(body, "<StackName>s</StackName><Parameters><member><ParameterKey>K</ParameterKey></member></Parameters><StackStatus>ROLLBACK_COMPLETE") {
		t.Fatalf("listing: only s must be failed: %s", body)
	}
	_, body, _ = call(t, p, "DescribeStackEvents", "s")
	if !strings.Contains(body, "CREATE_FAILED") || !strings.Contains(body, "limit &lt;exceeded&gt;") {
		t.Fatalf("events lack the failure: %s", body)
	}
	call(t, p, "DeleteStack", "s")
	if _, body, _ = call(t, p, "DescribeStacks", "s"); strings.Contains(body, "ROLLBACK") {
		t.Fatal("failure outlived DeleteStack")
	}
	if p.Count("DescribeStacks") != 7 || p.Faulted("CreateStack") != 2 {
		t.Fatalf("counts: DescribeStacks %d, CreateStack faulted %d", p.Count("DescribeStacks"), p.Faulted("CreateStack"))
	}
}
