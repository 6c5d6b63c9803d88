package podidentitywebhook

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-aws/kube-aws/core/names"
)

// writes lists the verbs of the actions that change something.
func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v)
		}
	}
	return out
}

// The configuration is created once, found current by every controller
// after (only a read), and updated when someone changed it or the CA
// changed; labels others added stay.
func TestEnsureIdempotent(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	want := Configuration([]byte("CA-1"))
	steps := []struct {
		name   string
		before func(t *testing.T)
		want   *admissionregistrationv1.MutatingWebhookConfiguration
		did    string
		writes string
		label  bool // the label someone added is there
	}{
		{"first controller creates", nil, want, "created", "create", false},
		{"second controller finds it current", nil, want, "current", "", false},
		{"someone made it fail closed and labelled it", func(t *testing.T) {
			got, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fail := admissionregistrationv1.Fail
			got.Webhooks[0].FailurePolicy = &fail
			got.Labels["team"] = "platform"
			if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want, "updated", "update", true},
		{"then current again", nil, want, "current", "", true},
		{"a new CA", nil, Configuration([]byte("CA-2")), "updated", "update", true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t)
			}
			kube.ClearActions()
			did, err := Ensure(ctx, kube, s.want)
			if err != nil || did != s.did {
				t.Fatalf("Ensure = %q, %v; want %q", did, err, s.did)
			}
			if got := strings.Join(writes(kube.Actions()), " "); got != s.writes {
				t.Errorf("writes %q, want %q", got, s.writes)
			}
			got, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, names.PodIdentityWebhookConfiguration, metav1.GetOptions{})
			if err != nil || !Current(got, s.want) {
				t.Fatalf("stored %+v (%v), want %+v", got, err, s.want)
			}
			if s.label && got.Labels["team"] != "platform" {
				t.Errorf("labels %v: the one someone added is gone", got.Labels)
			}
		})
	}
}

// The configuration sends pod creations, and nothing else, to the
// webhook on the API server's own controller, and fails open.
func TestConfiguration(t *testing.T) {
	c := Configuration([]byte("CA"))
	if c.Name != "kube-aws-pod-identity" || len(c.Webhooks) != 1 {
		t.Fatalf("configuration %+v", c)
	}
	w := c.Webhooks[0]
	r := w.Rules
	if *w.ClientConfig.URL != "https://127.0.0.1:10271/mutate" || w.ClientConfig.Service != nil || string(w.ClientConfig.CABundle) != "CA" ||
		*w.FailurePolicy != admissionregistrationv1.Ignore || *w.SideEffects != admissionregistrationv1.SideEffectClassNone ||
		strings.Join(w.AdmissionReviewVersions, " ") != "v1" || *w.TimeoutSeconds > 5 ||
		len(r) != 1 || len(r[0].Operations) != 1 || r[0].Operations[0] != admissionregistrationv1.Create ||
		strings.Join(r[0].APIGroups, ",") != "" || len(r[0].APIGroups) != 1 || strings.Join(r[0].APIVersions, ",") != "v1" || strings.Join(r[0].Resources, ",") != "pods" ||
		len(w.NamespaceSelector.MatchLabels)+len(w.NamespaceSelector.MatchExpressions)+len(w.ObjectSelector.MatchLabels)+len(w.ObjectSelector.MatchExpressions) != 0 {
		t.Errorf("webhook %+v", w)
	}
}

// A burst of pods of one service account reads it once; a missing one is
// remembered as missing; after the TTL it is read again.
func TestCache(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web",
		Annotations: map[string]string{names.PodRoleNameAnnotation: "reader"}}})
	now := time.Now()
	c := &Cache{Kube: kube, TTL: 5 * time.Second, Now: func() time.Time { return now }}
	for range 10 {
		sa, err := c.Get(ctx, "apps", "web")
		if err != nil || sa == nil || sa.Annotations[names.PodRoleNameAnnotation] != "reader" {
			t.Fatalf("Get = %+v, %v", sa, err)
		}
		if sa, err := c.Get(ctx, "apps", "ghost"); sa != nil || err != nil {
			t.Fatalf("a missing service account: %+v, %v", sa, err)
		}
	}
	if n := len(kube.Actions()); n != 2 {
		t.Errorf("%d reads for a burst of two service accounts, want 2", n)
	}
	now = now.Add(5 * time.Second)
	if _, err := c.Get(ctx, "apps", "web"); err != nil {
		t.Fatal(err)
	}
	if n := len(kube.Actions()); n != 3 {
		t.Errorf("%d reads after the TTL, want 3", n)
	}
	if len(c.entries) != 1 {
		t.Errorf("entries %v: the expired one stays", c.entries)
	}
}
