package podidentitywebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-aws/kube-aws/core/names"
)

var testIdentity = Identity{Cluster: "demo", Region: "us-east-1", Account: "123456789012", Partition: "aws",
	Endpoints: map[string]string{"AWS_ENDPOINT_URL_STS": "http://sts.test:5000", "AWS_ENDPOINT_URL": "http://aws.test:5000"}}

const roleARNValue = "arn:aws:iam::210987654321:role/app"

func sa(name string, annotations map[string]string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Annotations: annotations}}
}

func pod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", GenerateName: "web-"},
		Spec:       corev1.PodSpec{ServiceAccountName: "web", Containers: []corev1.Container{{Name: "web", Image: "web"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func request(p runtime.Object, op admissionv1.Operation, resource string) *admissionv1.AdmissionReview {
	raw, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "uid-1", Operation: op, Namespace: "apps",
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: resource},
			Object:   runtime.RawExtension{Raw: raw}},
	}
}

// wantEnv is what a container that sets nothing gets, for role.
func wantEnv(role string) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "AWS_ROLE_ARN", Value: role},
		{Name: "AWS_WEB_IDENTITY_TOKEN_FILE", Value: "/var/run/secrets/sts.amazonaws.com/serviceaccount/token"},
		{Name: "AWS_REGION", Value: "us-east-1"},
		{Name: "AWS_DEFAULT_REGION", Value: "us-east-1"},
		{Name: "AWS_STS_REGIONAL_ENDPOINTS", Value: "regional"},
		{Name: "AWS_ENDPOINT_URL", Value: "http://aws.test:5000"},
		{Name: "AWS_ENDPOINT_URL_STS", Value: "http://sts.test:5000"},
	}
}

var tokenMount = corev1.VolumeMount{Name: "aws-iam-token", MountPath: "/var/run/secrets/sts.amazonaws.com/serviceaccount", ReadOnly: true}

func tokenVolume() corev1.Volume {
	exp := int64(86400)
	return corev1.Volume{Name: "aws-iam-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "sts.amazonaws.com", ExpirationSeconds: &exp, Path: "token"}}}}}}
}

// given is the pod p with the token and the environment for role, as the
// webhook gives them to a pod that has none of it.
func given(role string, p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.Volumes = append(p.Spec.Volumes, tokenVolume())
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = append(cs[i].VolumeMounts, tokenMount)
			cs[i].Env = append(cs[i].Env, wantEnv(role)...)
		}
	}
	return p
}

func TestReview(t *testing.T) {
	byName := map[string]*corev1.ServiceAccount{
		"plain":    sa("plain", nil),
		"web":      sa("web", map[string]string{names.PodRoleARNAnnotation: roleARNValue}),
		"default":  sa("default", map[string]string{names.PodRoleNameAnnotation: "reader"}),
		"named":    sa("named", map[string]string{names.PodRoleNameAnnotation: "reader"}),
		"both":     sa("both", map[string]string{names.PodRoleARNAnnotation: roleARNValue, names.PodRoleNameAnnotation: "reader"}),
		"bad-arn":  sa("bad-arn", map[string]string{names.PodRoleARNAnnotation: "arn:aws:iam::12345:user/app"}),
		"bad-name": sa("bad-name", map[string]string{names.PodRoleNameAnnotation: strings.Repeat("x", 60)}),
		"bad-both": sa("bad-both", map[string]string{names.PodRoleARNAnnotation: "app", names.PodRoleNameAnnotation: "reader"}),
	}
	readerARN := "arn:aws:iam::123456789012:role/demo-pod-reader"
	withSA := func(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.ServiceAccountName = n } }
	tests := []struct {
		name    string
		review  *admissionv1.AdmissionReview
		want    *corev1.Pod // the pod after the patch; nil: no patch
		warning string      // a warning must contain it; "": none
		log     string      // a log line must contain it
	}{
		{"no annotation", request(pod(withSA("plain")), admissionv1.Create, "pods"), nil, "", ""},
		{"ARN annotation", request(pod(), admissionv1.Create, "pods"), given(roleARNValue, pod()), "",
			"pod apps/web-*: service account apps/web: IAM role " + roleARNValue},
		{"name annotation", request(pod(withSA("named")), admissionv1.Create, "pods"), given(readerARN, pod(withSA("named"))), "", "IAM role " + readerARN},
		{"no service account name is default", request(pod(withSA("")), admissionv1.Create, "pods"), given(readerARN, pod(withSA(""))), "", "service account apps/default"},
		{"both annotations: the ARN wins", request(pod(withSA("both")), admissionv1.Create, "pods"), given(roleARNValue, pod(withSA("both"))), "", ""},
		{"env already set is kept", request(pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "AWS_REGION", Value: "eu-west-1"}, {Name: "OTHER", Value: "1"}}
		}), admissionv1.Create, "pods"), func() *corev1.Pod {
			p := pod()
			p.Spec.Volumes = []corev1.Volume{tokenVolume()}
			c := &p.Spec.Containers[0]
			c.VolumeMounts = []corev1.VolumeMount{tokenMount}
			c.Env = []corev1.EnvVar{{Name: "AWS_REGION", Value: "eu-west-1"}, {Name: "OTHER", Value: "1"}}
			for _, e := range wantEnv(roleARNValue) {
				if e.Name != "AWS_REGION" {
					c.Env = append(c.Env, e)
				}
			}
			return p
		}(), "", ""},
		{"init containers and other volumes", request(pod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "init", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "side"})
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), admissionv1.Create, "pods"), given(roleARNValue, pod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "init", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "side"})
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})), "", ""},
		{"a volume of the token's name: left alone", request(pod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: names.PodRoleTokenVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), admissionv1.Create, "pods"), nil, "", ""},
		{"missing service account", request(pod(withSA("ghost")), admissionv1.Create, "pods"), nil, "", ""},
		{"malformed ARN", request(pod(withSA("bad-arn")), admissionv1.Create, "pods"), nil,
			`service account apps/bad-arn: annotation eks.amazonaws.com/role-arn is "arn:aws:iam::12345:user/app", not an IAM role's ARN`,
			"pod apps/web-*: service account apps/bad-arn: annotation eks.amazonaws.com/role-arn"},
		{"malformed ARN and a name: the ARN still decides", request(pod(withSA("bad-both")), admissionv1.Create, "pods"), nil, `is "app", not an IAM role's ARN`, "bad-both"},
		{"name too long for IAM", request(pod(withSA("bad-name")), admissionv1.Create, "pods"), nil, "names no pod role of cluster demo", "bad-name"},
		{"service account unreadable", request(pod(withSA("flaky")), admissionv1.Create, "pods"), nil, "could not be read", "recreate it"},
		{"update", request(pod(), admissionv1.Update, "pods"), nil, "", ""},
		{"not a pod", request(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}, admissionv1.Create, "configmaps"), nil, "", ""},
		{"a subresource", func() *admissionv1.AdmissionReview {
			r := request(pod(), admissionv1.Create, "pods")
			r.Request.SubResource = "binding"
			return r
		}(), nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs []string
			m := &Mutator{Identity: testIdentity,
				ServiceAccounts: func(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
					if ns != "apps" {
						t.Errorf("service account asked in namespace %s", ns)
					}
					if name == "flaky" {
						return nil, errors.New("the server is currently unable to handle the request")
					}
					return byName[name], nil
				},
				Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
			out := m.Review(context.Background(), tt.review)
			r := out.Response
			if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || r == nil || r.UID != "uid-1" || !r.Allowed {
				t.Fatalf("review %+v: want an allowed response to uid-1", out)
			}
			if tt.want == nil {
				if r.Patch != nil || r.PatchType != nil {
					t.Errorf("patch %s, want none", r.Patch)
				}
			} else {
				if r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
					t.Fatalf("patch type %v", r.PatchType)
				}
				got := applyPatch(t, tt.review.Request.Object.Raw, r.Patch)
				if !reflect.DeepEqual(got, tt.want) {
					g, _ := json.MarshalIndent(got, "", " ")
					w, _ := json.MarshalIndent(tt.want, "", " ")
					t.Errorf("patched pod\n%s\nwant\n%s\n(patch %s)", g, w, r.Patch)
				}
			}
			if (tt.warning == "") != (len(r.Warnings) == 0) || (tt.warning != "" && !strings.Contains(strings.Join(r.Warnings, "\n"), tt.warning)) {
				t.Errorf("warnings %q, want one with %q", r.Warnings, tt.warning)
			}
			if tt.log != "" && !strings.Contains(strings.Join(logs, "\n"), tt.log) {
				t.Errorf("log %q, want a line with %q", logs, tt.log)
			}
			if tt.want == nil && tt.warning == "" && len(logs) != 0 {
				t.Errorf("log %q for a pod left alone without a problem", logs)
			}
		})
	}
}

func applyPatch(t *testing.T, raw, patch []byte) *corev1.Pod {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	b, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("patch %s does not apply: %v", patch, err)
	}
	var out corev1.Pod
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// A pod role's ARN is on the region's partition, and the pod gets the
// environment without endpoints when the machine has none.
func TestRoleARNPartitions(t *testing.T) {
	for region, want := range map[string]string{
		"us-east-1":     "arn:aws:iam::123456789012:role/demo-pod-reader",
		"cn-north-1":    "arn:aws-cn:iam::123456789012:role/demo-pod-reader",
		"us-gov-west-1": "arn:aws-us-gov:iam::123456789012:role/demo-pod-reader",
	} {
		id := Identity{Cluster: "demo", Region: region, Account: "123456789012", Partition: names.Partition(region)}
		if got := id.RoleARN("reader"); got != want {
			t.Errorf("%s: %s, want %s", region, got, want)
		}
		if env := id.env(want); len(env) != 5 || env[2].Value != region {
			t.Errorf("%s: env %v", region, env)
		}
	}
}

// A machine's general endpoint reaches the pod's STS too: the Go SDK's
// client that assumes the role reads only the STS setting when the
// general one is set.
func TestEndpointsReachSTS(t *testing.T) {
	for _, tt := range []struct {
		name      string
		endpoints map[string]string
		want      map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"general only", map[string]string{"AWS_ENDPOINT_URL": "http://aws.test"},
			map[string]string{"AWS_ENDPOINT_URL": "http://aws.test", "AWS_ENDPOINT_URL_STS": "http://aws.test"}},
		{"STS of its own", map[string]string{"AWS_ENDPOINT_URL": "http://aws.test", "AWS_ENDPOINT_URL_STS": "http://sts.test"},
			map[string]string{"AWS_ENDPOINT_URL": "http://aws.test", "AWS_ENDPOINT_URL_STS": "http://sts.test"}},
		{"STS only", map[string]string{"AWS_ENDPOINT_URL_STS": "http://sts.test"}, map[string]string{"AWS_ENDPOINT_URL_STS": "http://sts.test"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := testIdentity
			id.Endpoints = tt.endpoints
			got := map[string]string{}
			for _, e := range id.env("arn:aws:iam::123456789012:role/x") {
				if strings.HasPrefix(e.Name, "AWS_ENDPOINT_URL") {
					got[e.Name] = e.Value
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("endpoints %v, want %v", got, tt.want)
			}
			if len(tt.endpoints) > 0 && tt.endpoints["AWS_ENDPOINT_URL_STS"] == "" && id.Endpoints["AWS_ENDPOINT_URL_STS"] != "" {
				t.Errorf("the identity's own endpoints were changed")
			}
		})
	}
}
