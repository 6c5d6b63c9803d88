package podidentitywebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-aws/kube-aws/core/names"
)

// TokenExpirationSeconds is how long a pod's token is valid; the kubelet
// renews a projected token when 80% of that has passed, and the AWS SDK
// rereads the file whenever it assumes the role again.
const TokenExpirationSeconds = 86400

// Identity is what the webhook puts into the pods it gives a role, beside
// the role itself: the cluster (for a pod role named by
// names.PodRoleNameAnnotation), where the roles are, and how the pods'
// AWS SDK reaches STS.
type Identity struct {
	Cluster   string
	Region    string
	Account   string
	Partition string
	// Endpoints are the machine's own AWS SDK endpoint settings
	// (awsenv.Forwarded), so that a pod reaches the same STS the
	// controller does (a private endpoint, an emulator).
	Endpoints map[string]string
}

// RoleARN is the ARN of the cluster's pod role named name.
func (id Identity) RoleARN(name string) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", id.Partition, id.Account, names.PodRoleName(id.Cluster, name))
}

// env is the environment every container of a pod with role gets, in this
// order: the web identity settings, the region, then the endpoints by name.
func (id Identity) env(role string) []corev1.EnvVar {
	out := []corev1.EnvVar{
		{Name: "AWS_ROLE_ARN", Value: role},
		{Name: "AWS_WEB_IDENTITY_TOKEN_FILE", Value: path.Join(names.PodRoleTokenDir, names.PodRoleTokenFile)},
		{Name: "AWS_REGION", Value: id.Region},
		{Name: "AWS_DEFAULT_REGION", Value: id.Region},
		{Name: "AWS_STS_REGIONAL_ENDPOINTS", Value: "regional"},
	}
	endpoints := id.Endpoints
	if all, ok := endpoints["AWS_ENDPOINT_URL"]; ok {
		if _, sts := endpoints[stsEndpoint]; !sts {
			// The AWS SDK for Go v2 makes the client that assumes the role
			// before it reads AWS_ENDPOINT_URL (its config resolves
			// credentials, then the base endpoint), and that client looks
			// only for the STS setting when the general one is set: without
			// it, a pod's SDK calls the public STS, whatever the machine's
			// endpoint. Saying it for STS too reaches every SDK.
			endpoints = maps.Clone(endpoints)
			endpoints[stsEndpoint] = all
		}
	}
	for _, k := range sortedKeys(endpoints) {
		out = append(out, corev1.EnvVar{Name: k, Value: endpoints[k]})
	}
	return out
}

// stsEndpoint is the AWS SDKs' endpoint setting for STS alone.
const stsEndpoint = "AWS_ENDPOINT_URL_STS"

// ServiceAccounts finds a service account; nil, nil when there is none.
type ServiceAccounts func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)

// Mutator answers the API server's AdmissionReviews of pod creations.
type Mutator struct {
	Identity        Identity
	ServiceAccounts ServiceAccounts
	Logf            func(format string, args ...any)
}

// roleARN matches an IAM role's ARN on any partition: 12-digit account,
// role name (with its path) of IAM's characters.
var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}$`)

// roleName is what IAM allows in a role's name.
var roleName = regexp.MustCompile(`^[\w+=,.@-]+$`)

// Review answers one AdmissionReview: always allowed (the webhook never
// refuses a pod), with a JSONPatch when the pod is given a role, and a
// warning when its service account asks for a role the webhook cannot give.
func (m *Mutator) Review(ctx context.Context, in *admissionv1.AdmissionReview) *admissionv1.AdmissionReview {
	out := &admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}}
	if in.Request == nil {
		return out
	}
	out.Response = &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
	patch, warnings := m.mutate(ctx, in.Request)
	out.Response.Warnings = warnings
	if len(patch) > 0 {
		b, err := json.Marshal(patch)
		if err != nil {
			// Only plain values are in a patch: a broken build.
			panic("podidentitywebhook: encoding a patch: " + err.Error())
		}
		pt := admissionv1.PatchTypeJSONPatch
		out.Response.Patch, out.Response.PatchType = b, &pt
	}
	return out
}

// op is one JSONPatch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

var podResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

// mutate returns the patch for a request, and the warnings for its user.
func (m *Mutator) mutate(ctx context.Context, req *admissionv1.AdmissionRequest) ([]op, []string) {
	if req.Operation != admissionv1.Create || req.Resource != podResource || req.SubResource != "" {
		return nil, nil
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		m.Logf("pod creation in %s: the object does not decode as a pod, left alone: %v", req.Namespace, err)
		return nil, nil
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == names.PodRoleTokenVolume {
			return nil, nil
		}
	}
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	who := podName(ns, &pod)
	sa, err := m.ServiceAccounts(ctx, ns, saName)
	if err != nil {
		m.Logf("pod %s: reading its service account %s/%s: %v; it starts without an IAM role (recreate it to get one)", who, ns, saName, err)
		return nil, []string{fmt.Sprintf("kube-aws pod identity: service account %s/%s could not be read (%v): the pod gets no IAM role; recreate it to get one", ns, saName, err)}
	}
	if sa == nil {
		return nil, nil
	}
	role, problem := m.role(sa)
	if problem != "" {
		m.Logf("pod %s: service account %s/%s: %s; the pod starts without an IAM role", who, ns, saName, problem)
		return nil, []string{fmt.Sprintf("kube-aws pod identity: service account %s/%s: %s: the pod gets no IAM role", ns, saName, problem)}
	}
	if role == "" {
		return nil, nil
	}
	patch := m.patch(&pod, role)
	dry := ""
	if req.DryRun != nil && *req.DryRun {
		dry = " (dry run)"
	}
	m.Logf("pod %s: service account %s/%s: IAM role %s%s", who, ns, saName, role, dry)
	return patch, nil
}

// role is the ARN of the role sa names, "" for none, or the problem with
// what it names. names.PodRoleARNAnnotation wins over
// names.PodRoleNameAnnotation when a service account has both: it is the
// explicit one, and the key charts written for EKS set; the name is then
// ignored, and a malformed ARN is not made up for by the name.
func (m *Mutator) role(sa *corev1.ServiceAccount) (string, string) {
	if arn, ok := sa.Annotations[names.PodRoleARNAnnotation]; ok {
		arn = strings.TrimSpace(arn)
		if !roleARN.MatchString(arn) {
			return "", fmt.Sprintf("annotation %s is %q, not an IAM role's ARN (arn:<partition>:iam::<account>:role/<name>)", names.PodRoleARNAnnotation, arn)
		}
		return arn, ""
	}
	if name, ok := sa.Annotations[names.PodRoleNameAnnotation]; ok {
		name = strings.TrimSpace(name)
		full := names.PodRoleName(m.Identity.Cluster, name)
		if name == "" || !roleName.MatchString(name) || len(full) > 64 {
			return "", fmt.Sprintf("annotation %s is %q, which names no pod role of cluster %s (IAM role name %q: letters, digits and +=,.@_- only, at most 64)", names.PodRoleNameAnnotation, name, m.Identity.Cluster, full)
		}
		return m.Identity.RoleARN(name), ""
	}
	return "", ""
}

// patch adds the token volume, and to every container and init container
// its mount and the environment, keeping what a container already sets.
func (m *Mutator) patch(pod *corev1.Pod, role string) []op {
	var ops []op
	volume := corev1.Volume{Name: names.PodRoleTokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: names.PodRoleAudience, ExpirationSeconds: ptr(int64(TokenExpirationSeconds)), Path: names.PodRoleTokenFile,
		}}},
	}}}
	ops = appendTo(ops, "/spec/volumes", len(pod.Spec.Volumes) == 0, volume)
	env := m.Identity.env(role)
	mount := corev1.VolumeMount{Name: names.PodRoleTokenVolume, MountPath: names.PodRoleTokenDir, ReadOnly: true}
	for _, list := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", pod.Spec.InitContainers}, {"containers", pod.Spec.Containers}} {
		for i, c := range list.containers {
			base := fmt.Sprintf("/spec/%s/%d", list.field, i)
			if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == mount.MountPath }) {
				ops = appendTo(ops, base+"/volumeMounts", len(c.VolumeMounts) == 0, mount)
			}
			empty := len(c.Env) == 0
			for _, e := range env {
				if slices.ContainsFunc(c.Env, func(v corev1.EnvVar) bool { return v.Name == e.Name }) {
					continue
				}
				ops = appendTo(ops, base+"/env", empty, e)
				empty = false
			}
		}
	}
	return ops
}

// appendTo appends v to the list at field: a new list when there is none
// yet (a JSONPatch cannot append to a missing list).
func appendTo(ops []op, field string, missing bool, v any) []op {
	if missing {
		return append(ops, op{Op: "add", Path: field, Value: []any{v}})
	}
	return append(ops, op{Op: "add", Path: field + "/-", Value: v})
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }

// podName names a pod for the log: namespace/name, or its generateName
// followed by * when the API server has not named it yet.
func podName(ns string, pod *corev1.Pod) string {
	if pod.Name != "" {
		return ns + "/" + pod.Name
	}
	return ns + "/" + pod.GenerateName + "*"
}
