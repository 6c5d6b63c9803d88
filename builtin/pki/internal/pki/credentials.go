// Package pki is the pki plugin's logic as plain functions: it makes (once)
// or loads the cluster's CAs, service-account key and the leaves that do not
// depend on a machine, checks a CA an operator brings, and turns them into
// what each role's machines get: the files of the CAs they need (keys as
// secret markers) and a certificates plan for the leaves they issue
// themselves.
package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/kube-aws/kube-aws/builtin/pki/internal/authority"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/plugins/sdk/leafcert"
)

// Plugin is the plugin's name.
const Plugin = "pki"

// Keeper keeps what the plugin made between runs, in the host's store of
// generated secrets: the plain text stays with kube-aws (credentials/pki/
// beside cluster.yaml), the plugin writes nothing to disk, and everywhere
// else a key is its Marker.
type Keeper interface {
	// Get returns what is kept under name.
	Get(name string) ([]byte, bool, error)
	// Put keeps value under name.
	Put(name string, value []byte) error
	// Marker stands for the secret kept under name in rendered files.
	Marker(name string) string
	// Where says where name is kept, for messages (credentials/pki/ca.key).
	Where(name string) string
}

// Names of what the plugin keeps. Certificates are kept beside their keys,
// so that the operator's copy of a CA is one folder. They are the plugin's
// own: kube-aws kubeconfig gets the admin credential through the
// admin-credential operation (Admin), never by opening these files.
const (
	KeepCACert                  = "ca.crt"
	KeepCAKey                   = "ca.key"
	KeepFrontProxyCACert        = "front-proxy-ca.crt"
	KeepFrontProxyCAKey         = "front-proxy-ca.key"
	KeepEtcdCACert              = "etcd-ca.crt"
	KeepEtcdCAKey               = "etcd-ca.key"
	KeepServiceAccountKey       = "sa.key"
	KeepAdminCert               = "admin.crt"
	KeepAdminKey                = "admin.key"
	KeepAPIServerEtcdClientCert = "apiserver-etcd-client.crt"
	KeepAPIServerEtcdClientKey  = "apiserver-etcd-client.key"
)

// Credentials are the cluster's CAs, service-account key and the leaves
// issued once, as the machines get them: certificates as PEM, keys as
// markers.
type Credentials struct {
	CA, FrontProxyCA, EtcdCA *authority.CA
	// ServiceAccountPub is the service-account public key (PEM).
	ServiceAccountPub []byte
	// AdminCert is the operator's admin client certificate (kube-aws
	// kubeconfig), AdminKey its key.
	AdminCert, AdminKey []byte
	// APIServerEtcdClientCert is the API server's etcd client certificate:
	// issued here because controllers do not hold the etcd CA's key.
	APIServerEtcdClientCert []byte
	// Markers of the keys, by Keep* name.
	Markers map[string]string
}

// Load makes or loads the credentials. Made once, they are kept and
// reused: a second run makes nothing and changes nothing. An operator who
// brings their own CA puts its certificate and key where kube-aws keeps
// its own (Keeper.Where: credentials/pki/ca.crt and ca.key) before the
// first render; it is checked like one kube-aws made (a CA, valid now, its
// key belongs to it), and a problem is a fatal naming the file.
func Load(k Keeper, now time.Time, log func(string)) (*Credentials, diag.List) {
	cr := &Credentials{Markers: map[string]string{}}
	var diags diag.List
	cas := []struct {
		cn        string
		cert, key string
		into      **authority.CA
	}{
		{"kubernetes", KeepCACert, KeepCAKey, &cr.CA},
		{"front-proxy-ca", KeepFrontProxyCACert, KeepFrontProxyCAKey, &cr.FrontProxyCA},
		{"etcd-ca", KeepEtcdCACert, KeepEtcdCAKey, &cr.EtcdCA},
	}
	for _, c := range cas {
		ca, d := keptCA(k, c.cn, c.cert, c.key, now, log)
		diags = append(diags, d...)
		*c.into = ca
		cr.Markers[c.cert], cr.Markers[c.key] = k.Marker(c.cert), k.Marker(c.key)
	}

	pub, d := serviceAccountKey(k, log)
	diags = append(diags, d...)
	cr.ServiceAccountPub = pub
	cr.Markers[KeepServiceAccountKey] = k.Marker(KeepServiceAccountKey)
	if diags.HasFatal() {
		return cr, diags
	}

	var err error
	cr.AdminCert, cr.AdminKey, err = keptLeaf(k, cr.CA, AdminLeaf(), KeepAdminCert, KeepAdminKey, now, log)
	if err != nil {
		diags = append(diags, diag.Fatalf("pki: the operator's admin certificate: %v", err))
	}
	cr.Markers[KeepAdminCert], cr.Markers[KeepAdminKey] = k.Marker(KeepAdminCert), k.Marker(KeepAdminKey)
	cr.APIServerEtcdClientCert, _, err = keptLeaf(k, cr.EtcdCA, APIServerEtcdClientLeaf(), KeepAPIServerEtcdClientCert, KeepAPIServerEtcdClientKey, now, log)
	if err != nil {
		diags = append(diags, diag.Fatalf("pki: the API server's etcd client certificate: %v", err))
	}
	cr.Markers[KeepAPIServerEtcdClientCert], cr.Markers[KeepAPIServerEtcdClientKey] = k.Marker(KeepAPIServerEtcdClientCert), k.Marker(KeepAPIServerEtcdClientKey)
	return cr, diags
}

// Admin returns the operator's admin credential as kept: the cluster CA's
// certificate, the admin certificate and its key (PEM). It makes nothing:
// a part not kept yet (no render ran beside this cluster.yaml) is a fatal
// saying how to get it, and so are parts that do not belong together (a
// certificate the CA did not sign, a key of another certificate: a partial
// restore) and an expired certificate.
func Admin(k Keeper, now time.Time) (caCert, cert, key []byte, diags diag.List) {
	parts := []struct {
		name string
		into *[]byte
	}{{KeepCACert, &caCert}, {KeepAdminCert, &cert}, {KeepAdminKey, &key}}
	var missing diag.List
	for _, p := range parts {
		b, ok, err := k.Get(p.name)
		switch {
		case err != nil:
			diags = append(diags, diag.Fatalf("pki: reading %s: %v", k.Where(p.name), err))
		case !ok:
			missing = append(missing, diag.Fatalf("pki: %s not found: run kube-aws render first (it makes the admin credential), or restore %s from your copy", k.Where(p.name), k.Where("")))
		}
		*p.into = b
	}
	if len(missing) == len(parts) {
		// Nothing made yet: one line says so.
		missing = diag.List{diag.Fatalf("pki: no admin credential in %s yet: run kube-aws render first (it makes one), or restore %s from your copy", k.Where(""), k.Where(""))}
	}
	if diags = append(diags, missing...); diags.HasFatal() {
		return nil, nil, nil, diags
	}
	restore := "run kube-aws render: it issues the admin certificate again from the CA (or restore " + k.Where("") + " from your copy as a whole)"
	ca, err := authority.ParseCertificate(caCert)
	if err != nil {
		return nil, nil, nil, diag.List{diag.Fatalf("pki: %s %v", k.Where(KeepCACert), err).WithHint("restore the CA from your copy")}
	}
	c, err := authority.ParseCertificate(cert)
	if err != nil {
		return nil, nil, nil, diag.List{diag.Fatalf("pki: %s %v", k.Where(KeepAdminCert), err).WithHint(restore)}
	}
	signer, err := authority.ParseKey(key)
	if err != nil {
		return nil, nil, nil, diag.List{diag.Fatalf("pki: %s %v", k.Where(KeepAdminKey), err).WithHint(restore)}
	}
	switch {
	case c.CheckSignatureFrom(ca) != nil:
		diags = append(diags, diag.Fatalf("pki: %s was not issued by the cluster CA %s", k.Where(KeepAdminCert), k.Where(KeepCACert)).WithHint(restore))
	case !leafcert.SamePublicKey(c.PublicKey, signer.Public()):
		diags = append(diags, diag.Fatalf("pki: %s does not belong to %s", k.Where(KeepAdminKey), k.Where(KeepAdminCert)).WithHint(restore))
	case !now.Before(c.NotAfter):
		diags = append(diags, diag.Fatalf("pki: the admin certificate (%s) expired on %s", k.Where(KeepAdminCert), c.NotAfter.UTC().Format("2006-01-02")).
			WithHint("run kube-aws render: it issues a new one once two thirds of its validity are gone"))
	}
	if diags.HasFatal() {
		return nil, nil, nil, diags
	}
	return caCert, cert, key, nil
}

// AdminLeaf is the operator's admin certificate: cluster-admin through
// the system:masters group, which no RBAC binding can take away (a way
// back in when RBAC is broken).
func AdminLeaf() authority.Leaf {
	return authority.Leaf{CommonName: "kubernetes-admin", Organizations: []string{names.GroupMasters},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// APIServerEtcdClientLeaf is the API server's client certificate for etcd.
func APIServerEtcdClientLeaf() authority.Leaf {
	return authority.Leaf{CommonName: names.UserAPIServerEtcdClient, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// keptCA loads the CA kept under cert and key, or makes and keeps one.
func keptCA(k Keeper, cn, certName, keyName string, now time.Time, log func(string)) (*authority.CA, diag.List) {
	certPEM, haveCert, err := k.Get(certName)
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: reading %s: %v", k.Where(certName), err)}
	}
	keyPEM, haveKey, err := k.Get(keyName)
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: reading %s: %v", k.Where(keyName), err)}
	}
	switch {
	case !haveCert && !haveKey:
		ca, err := authority.New(cn, now, authority.CAValidity)
		if err != nil {
			return nil, diag.List{diag.Fatalf("pki: making CA %s: %v", cn, err)}
		}
		// The key first: a certificate kept without its key would be a CA
		// nobody can use.
		if err := k.Put(keyName, ca.KeyPEM); err != nil {
			return nil, diag.List{diag.Fatalf("pki: keeping %s: %v", k.Where(keyName), err)}
		}
		if err := k.Put(certName, ca.CertPEM); err != nil {
			return nil, diag.List{diag.Fatalf("pki: keeping %s: %v", k.Where(certName), err)}
		}
		log(fmt.Sprintf("made CA %s (valid until %s), kept in %s and %s", cn, ca.Cert.NotAfter.Format("2006-01-02"), k.Where(certName), k.Where(keyName)))
		return ca, nil
	case haveCert != haveKey:
		missing, present := k.Where(keyName), k.Where(certName)
		if !haveCert {
			missing, present = present, missing
		}
		return nil, diag.List{diag.Fatalf("pki: %s is missing while %s is there: half a CA is no CA", missing, present).
			WithHint("restore " + missing + " from your copy; if the CA is lost for good, remove " + present + " too and kube-aws makes a new CA (every machine must then be replaced)")}
	}
	ca, err := authority.Load(certPEM, keyPEM)
	if err == nil {
		err = ca.Current(now)
	}
	if err != nil {
		where := k.Where(certName)
		var p *authority.Problem
		if errors.As(err, &p) && p.Part == authority.PartKey {
			where = k.Where(keyName)
		}
		return nil, diag.List{diag.Fatalf("pki: CA %s %v", where, err).
			WithHint("restore the CA from your copy, or remove " + k.Where(certName) + " and " + k.Where(keyName) + " and kube-aws makes a new one (every machine must then be replaced)")}
	}
	return ca, nil
}

// serviceAccountKey loads or makes the service-account key and returns
// its public key.
func serviceAccountKey(k Keeper, log func(string)) ([]byte, diag.List) {
	key, ok, err := k.Get(KeepServiceAccountKey)
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: reading %s: %v", k.Where(KeepServiceAccountKey), err)}
	}
	if ok {
		pub, err := authority.PublicKeyPEM(key)
		if err != nil {
			return nil, diag.List{diag.Fatalf("pki: the service-account key %s %v", k.Where(KeepServiceAccountKey), err).
				WithHint("restore it from your copy; a new key invalidates every service-account token issued")}
		}
		return pub, nil
	}
	key, pub, err := authority.NewServiceAccountKey()
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: making the service-account key: %v", err)}
	}
	if err := k.Put(KeepServiceAccountKey, key); err != nil {
		return nil, diag.List{diag.Fatalf("pki: keeping %s: %v", k.Where(KeepServiceAccountKey), err)}
	}
	log("made the service-account key, kept in " + k.Where(KeepServiceAccountKey))
	return pub, nil
}

// keptLeaf returns the leaf kept under certName and keyName when ca signed
// it for l and it has a third of its validity left; otherwise it issues a
// new one and keeps it.
func keptLeaf(k Keeper, ca *authority.CA, l authority.Leaf, certName, keyName string, now time.Time, log func(string)) (certPEM, keyPEM []byte, err error) {
	certPEM, haveCert, err := k.Get(certName)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, haveKey, err := k.Get(keyName)
	if err != nil {
		return nil, nil, err
	}
	why := "none was issued yet"
	if haveCert && haveKey {
		var keep bool
		if keep, why = ca.Keep(certPEM, keyPEM, l, now); keep {
			return certPEM, keyPEM, nil
		}
	}
	if certPEM, keyPEM, err = ca.Issue(l, now); err != nil {
		return nil, nil, err
	}
	if err := k.Put(keyName, keyPEM); err != nil {
		return nil, nil, err
	}
	if err := k.Put(certName, certPEM); err != nil {
		return nil, nil, err
	}
	log(fmt.Sprintf("issued %s (%s), kept in %s", l.CommonName, why, k.Where(certName)))
	return certPEM, keyPEM, nil
}

// Expiring warns about each kept certificate (the CAs, the admin and the
// API server's etcd client certificates) that expires within
// authority.ExpiryWarning of now, or has expired: a fatal then, as
// nothing it signs or authenticates works any more.
func Expiring(k Keeper, now time.Time) diag.List {
	var out diag.List
	for _, c := range []struct{ name, what, fix string }{
		{KeepCACert, "the cluster CA", "make a new CA (remove " + k.Where(KeepCACert) + " and " + k.Where(KeepCAKey) + ", render and replace every machine)"},
		{KeepEtcdCACert, "the etcd CA", "make a new CA (remove " + k.Where(KeepEtcdCACert) + " and " + k.Where(KeepEtcdCAKey) + ", render and replace every machine)"},
		{KeepFrontProxyCACert, "the front-proxy CA", "make a new CA (remove " + k.Where(KeepFrontProxyCACert) + " and " + k.Where(KeepFrontProxyCAKey) + ", render and replace the controllers)"},
		{KeepAdminCert, "the admin certificate", "run kube-aws render: it issues a new one once two thirds of its validity are gone"},
		{KeepAPIServerEtcdClientCert, "the API server's etcd client certificate", "run kube-aws render and up: it issues a new one once two thirds of its validity are gone"},
	} {
		certPEM, ok, err := k.Get(c.name)
		if err != nil {
			out = append(out, diag.Warningf("pki: reading %s: %v", k.Where(c.name), err))
			continue
		}
		if !ok {
			continue
		}
		notAfter, err := authority.NotAfter(certPEM)
		if err != nil {
			out = append(out, diag.Warningf("pki: %s %v", k.Where(c.name), err))
			continue
		}
		left := notAfter.Sub(now)
		switch {
		case left <= 0:
			out = append(out, diag.Fatalf("pki: %s (%s) expired on %s", c.what, k.Where(c.name), notAfter.UTC().Format("2006-01-02")).WithHint(c.fix))
		case left < authority.ExpiryWarning:
			out = append(out, diag.Warningf("pki: %s (%s) expires on %s, in %d days", c.what, k.Where(c.name),
				notAfter.UTC().Format("2006-01-02"), int(left.Hours()/24)).WithHint(c.fix))
		}
	}
	return out
}
