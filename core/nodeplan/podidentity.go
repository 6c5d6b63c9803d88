package nodeplan

// PodIdentityWebhookPlan (PodIdentityWebhookPath) configures
// `pod-identity-webhook`, the long-running admission webhook on the
// controllers that gives a pod whose service account names an IAM role
// (names.PodRoleARNAnnotation, names.PodRoleNameAnnotation) a token for
// names.PodRoleAudience and the AWS SDK's web identity environment. Its
// serving certificate is issued in memory from the CA the plan names.
type PodIdentityWebhookPlan struct {
	// Kubeconfig may get service accounts in every namespace and create,
	// get and update mutatingwebhookconfigurations.
	Kubeconfig string `json:"kubeconfig"`
	// CACert and CAKey are the cluster CA (names.PKICACert,
	// names.PKICAKey): it signs the webhook's serving certificate, and the
	// webhook configuration's caBundle is CACert.
	CACert string `json:"caCert"`
	CAKey  string `json:"caKey"`
}

// Validate implements Plan.
func (p *PodIdentityWebhookPlan) Validate() error {
	var c checker
	c.absPath("kubeconfig", p.Kubeconfig)
	c.absPath("caCert", p.CACert)
	c.absPath("caKey", p.CAKey)
	return c.err()
}
