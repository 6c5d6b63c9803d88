package podidentitywebhook

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/names"
)

// WebhookName is the webhook's name in the configuration (a qualified
// name, as the API requires).
const WebhookName = "pod-identity.kube-aws.io"

// TimeoutSeconds bounds the API server's call: the webhook answers from
// memory or after one GET of a service account, and a pod creation should
// not wait long on a controller whose webhook is stuck.
const TimeoutSeconds = 3

// URL is where the API server calls the webhook: on its own controller.
var URL = fmt.Sprintf("https://127.0.0.1:%d/mutate", names.PodIdentityWebhookPort)

// Configuration is the MutatingWebhookConfiguration every controller
// keeps, the same on each: the API server sends every pod creation to the
// webhook on its own controller (its URL is the loopback address; the API
// server is on the host's network), trusting caPEM, the cluster CA, that
// signs each controller's serving certificate.
//
// failurePolicy is Ignore: a controller whose webhook is not up yet (at
// boot, during a restart) must not refuse every pod creation, its own
// add-ons' included. A pod created then starts without its role (no token,
// no AWS_ROLE_ARN: its SDK falls back to the node's chain, which IMDS's hop
// limit closes to pods); recreating it gives it its role.
//
// Every field the API server would default is set, so that a
// configuration read back compares equal when nothing changed.
func Configuration(caPEM []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	equivalent := admissionregistrationv1.Equivalent
	none := admissionregistrationv1.SideEffectClassNone
	never := admissionregistrationv1.NeverReinvocationPolicy
	namespaced := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: names.PodIdentityWebhookConfiguration,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kube-aws"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr(URL), CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
					Scope: &namespaced},
			}},
			FailurePolicy:           &ignore,
			MatchPolicy:             &equivalent,
			NamespaceSelector:       &metav1.LabelSelector{},
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             &none,
			TimeoutSeconds:          ptr(int32(TimeoutSeconds)),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &never,
		}},
	}
}

// Ensure creates the configuration, or updates it when it differs from
// want, and says which it did ("created", "updated", "current"). Every
// controller calls it with the same want: whichever comes second finds it
// current, and a race between two is retried.
func Ensure(ctx context.Context, kube kubernetes.Interface, want *admissionregistrationv1.MutatingWebhookConfiguration) (string, error) {
	api := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	var last error
	for range 5 {
		got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, want, metav1.CreateOptions{FieldManager: "kube-aws-node"})
			if err == nil {
				return "created", nil
			}
		case err != nil:
			return "", fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", want.Name, err)
		case Current(got, want):
			return "current", nil
		default:
			next := want.DeepCopy()
			next.ResourceVersion = got.ResourceVersion
			// Labels and annotations others added stay.
			next.Labels = merged(got.Labels, want.Labels)
			next.Annotations = got.Annotations
			_, err = api.Update(ctx, next, metav1.UpdateOptions{FieldManager: "kube-aws-node"})
			if err == nil {
				return "updated", nil
			}
		}
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			return "", fmt.Errorf("writing MutatingWebhookConfiguration %s: %w", want.Name, err)
		}
		last = err
	}
	return "", fmt.Errorf("writing MutatingWebhookConfiguration %s: another writer kept changing it: %w", want.Name, last)
}

// Current says whether got is want: the same webhooks and want's labels.
func Current(got, want *admissionregistrationv1.MutatingWebhookConfiguration) bool {
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(got.Webhooks, want.Webhooks)
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
