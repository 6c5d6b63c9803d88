package oci

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/oci/cosign"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// Signatures made by the cosign CLI with `cosign sign --key`, in both of
// its formats, verify with the public key; an unsigned artifact and one
// signed with another key are refused before anything is downloaded.
func TestSignatures(t *testing.T) {
	f := newFixture(t, registrytest.Options{})
	cli := registrytest.NewCosign(t)
	keys := t.TempDir()
	mine := filepath.Join(keys, "mine")
	theirs := filepath.Join(keys, "theirs")
	for _, d := range []string{mine, theirs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	myKey, myPub := cli.GenerateKeyPair(t, mine)
	theirKey, _ := cli.GenerateKeyPair(t, theirs)

	dir := pluginDir(t, "hello", nil)
	bundle := f.push(t, dir, "plugins/hello:bundle")
	// Another artifact for the second format: its own digest.
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	simple := f.push(t, dir, "plugins/hello:simple")
	f.push(t, pluginDir(t, "hello", map[string]string{"x": "y"}), "plugins/hello:unsigned")
	wrong := f.push(t, pluginDir(t, "hello", map[string]string{"x": "z"}), "plugins/hello:wrong")

	cli.Sign(t, myKey, bundle.Repository+"@"+bundle.Digest, registrytest.Bundle)
	cli.Sign(t, myKey, simple.Repository+"@"+simple.Digest, registrytest.SimpleSigning)
	cli.Sign(t, theirKey, wrong.Repository+"@"+wrong.Digest, registrytest.Bundle)
	cli.Sign(t, theirKey, wrong.Repository+"@"+wrong.Digest, registrytest.SimpleSigning)

	fp, err := cosign.LoadKey(myPub)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tag     string
		wantErr string
		errType any
	}{
		{tag: "bundle"},
		{tag: "simple"},
		{tag: "unsigned", wantErr: "has no cosign signature", errType: new(*cosign.NoSignatureError)},
		{tag: "wrong", wantErr: "none of its 2 cosign signature(s) verifies with the key " + myPub, errType: new(*cosign.BadSignatureError)},
	} {
		t.Run(tc.tag, func(t *testing.T) {
			before, _ := f.cache.Entries()
			got, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:" + tc.tag), KeyFile: myPub})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Key != fp.Fingerprint || got.Dir == "" {
					t.Errorf("installed %+v, want key %s", got, fp.Fingerprint)
				}
				// The check is recorded for kube-aws, which cannot repeat it.
				v, ok := f.cache.LookupVerified(got.Digest, fp.Fingerprint)
				if !ok || v.Name != "hello" || v.Platforms[HostPlatform()].SHA256 != got.Platforms[HostPlatform()].SHA256 {
					t.Errorf("verification record %+v, %v", v, ok)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "plugin hello from "+f.reg.Ref("plugins/hello:"+tc.tag)) {
				t.Fatalf("err = %v, want it to name the plugin and say %q", err, tc.wantErr)
			}
			if !errors.As(err, tc.errType) {
				t.Errorf("err is %T", err)
			}
			if got.Dir != "" {
				t.Errorf("an unverified plugin was installed into %s", got.Dir)
			}
			if after, _ := f.cache.Entries(); len(after) != len(before) {
				t.Errorf("cache went from %v to %v in a refused install", before, after)
			}
			if _, ok := f.cache.LookupVerified(got.Digest, fp.Fingerprint); ok || got.Digest == "" {
				t.Errorf("a refused signature of %q was recorded as checked", got.Digest)
			}
		})
	}
	// Installed without a key, nothing is recorded as checked.
	got, err := f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:unsigned")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.cache.LookupVerified(got.Digest, fp.Fingerprint); ok {
		t.Error("an install without a key recorded a signature check")
	}
	// A digest plugins.lock pins that the key did not sign says so, and
	// what to do.
	_, err = f.install(t, helper.InstallRequest{Name: "hello", Source: f.reg.Ref("plugins/hello:bundle"), Pinned: got.Digest, KeyFile: myPub})
	for _, want := range []string{"plugin hello from " + f.reg.Ref("plugins/hello:bundle") + " (" + got.Digest + ") is refused: plugins.lock pins it to that digest, and it has no cosign signature",
		"with the key " + myPub, "restore plugins.lock", "kube-aws plugins upgrade hello"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pinned unsigned digest: %v\ndoes not say %q", err, want)
		}
	}
}
