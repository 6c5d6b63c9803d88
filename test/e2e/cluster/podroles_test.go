//go:build e2ecluster

package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/names"
)

// The pod role cluster.yaml.example declares (plugins.iam.values.podRoles)
// and the service account it trusts.
const (
	examplePodRole        = "app-reader"
	examplePodRoleAccount = "app-reader"
)

// podsAssumeTheirOwnRoles: a pod whose service account names a pod role
// gets that role's credentials through the AWS SDK's default chain, with a
// token of its own that the harness's STS verifies as AWS does (issuer of
// an existing OIDC provider, signature by a key of the published key set,
// audience, and the role's trust policy for the token's subject); a pod
// whose service account names the role without being trusted by it is
// refused; a pod without a role gets no credentials at all (its node's
// metadata service answers no pod).
func (e *example) podsAssumeTheirOwnRoles(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, nodesByPool map[string][]node) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	issuer, err := e.stackOutput(ctx, names.OutputServiceAccountIssuer)
	if err != nil {
		t.Fatal(err)
	}
	roleARN, err := e.stackOutput(ctx, names.PodRoleArnOutput(examplePodRole))
	if err != nil {
		t.Fatal(err)
	}
	const intruder = "app-intruder"
	accounts := []*corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: examplePodRoleAccount, Annotations: map[string]string{names.PodRoleNameAnnotation: examplePodRole}}},
		// The role's ARN, as EKS's annotation gives it: the webhook passes it
		// on, and STS refuses, since the role trusts app-reader alone.
		{ObjectMeta: metav1.ObjectMeta{Name: intruder, Annotations: map[string]string{names.PodRoleARNAnnotation: roleARN}}},
	}
	for _, sa := range accounts {
		_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("service account %s: %v", sa.Name, err)
		}
	}
	var pools []string
	for p := range nodesByPool {
		pools = append(pools, p)
	}
	slices.Sort(pools)
	worker := nodesByPool[pools[0]][0].name
	env := []corev1.EnvVar{{Name: "PROBE_AWS", Value: "40s"}}
	provider := strings.TrimPrefix(issuer, "https://")

	start := time.Now()
	rep, err := runProbeAs(ctx, cs, "irsa-reader", worker, examplePodRoleAccount, env)
	switch {
	case err != nil || rep.AWS == nil:
		t.Errorf("the %s pod on %s: %v", examplePodRoleAccount, worker, err)
	default:
		a := rep.AWS
		if a.RoleARN != roleARN {
			t.Errorf("AWS_ROLE_ARN is %q, want the pod role's ARN %s (the webhook resolves %s=%s)", a.RoleARN, roleARN, names.PodRoleNameAnnotation, examplePodRole)
		}
		if a.TokenFile != names.PodRoleTokenDir+"/"+names.PodRoleTokenFile {
			t.Errorf("AWS_WEB_IDENTITY_TOKEN_FILE is %q", a.TokenFile)
		}
		// What the OIDC provider and the role's trust policy check.
		if a.Issuer != issuer {
			t.Errorf("the token's issuer is %q, want the OIDC provider's %s", a.Issuer, issuer)
		}
		if !slices.Equal(a.Audience, []string{names.PodRoleAudience}) {
			t.Errorf("the token's audience is %v, want [%s] (the provider's client id)", a.Audience, names.PodRoleAudience)
		}
		if want := "system:serviceaccount:default:" + examplePodRoleAccount; a.Subject != want {
			t.Errorf("the token's subject is %q, want %s (the role's %s:sub condition)", a.Subject, want, provider)
		}
		roleName := roleARN[strings.LastIndex(roleARN, "/")+1:]
		if want := ":assumed-role/" + roleName + "/"; a.Error != "" || !strings.Contains(a.Caller, want) {
			t.Errorf("STS (%s) says the pod is %q (error %q), want the assumed role %s", a.STS, a.Caller, a.Error, roleName)
		} else {
			t.Logf("a pod of service account %s on %s is %s to STS at %s (token of %s for %v, key %s), %s",
				examplePodRoleAccount, worker, a.Caller, a.STS, a.Issuer, a.Audience, a.KeyID, time.Since(start).Round(time.Millisecond))
		}
	}

	rep, err = runProbeAs(ctx, cs, "irsa-intruder", worker, intruder, env)
	switch {
	case err != nil || rep.AWS == nil:
		t.Errorf("the %s pod: %v", intruder, err)
	case rep.AWS.Caller != "" || !strings.Contains(rep.AWS.Error, "AccessDenied"):
		t.Errorf("a pod of %s, which the role does not trust, got %q (error %q), want AccessDenied from STS", intruder, rep.AWS.Caller, rep.AWS.Error)
	default:
		t.Logf("a pod of %s naming the role's ARN is refused by STS: %s", intruder, oneLine(rep.AWS.Error))
	}

	rep, err = runProbeAs(ctx, cs, "irsa-none", worker, "", []corev1.EnvVar{{Name: "PROBE_AWS", Value: "15s"}})
	switch {
	case err != nil || rep.AWS == nil:
		t.Errorf("the default service account's pod: %v", err)
	case rep.AWS.Caller != "" || rep.AWS.RoleARN != "" || rep.AWS.TokenFile != "":
		t.Errorf("a pod without a role has AWS_ROLE_ARN %q, token file %q and is %q to STS: it must have no credentials", rep.AWS.RoleARN, rep.AWS.TokenFile, rep.AWS.Caller)
	default:
		t.Logf("a pod without a role gets no credentials: %s", oneLine(rep.AWS.Error))
	}
}

// oneLine shortens an SDK error for the log.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 240 {
		s = s[:240] + "..."
	}
	return s
}
