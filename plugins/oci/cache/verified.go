package cache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Verified records that the kube-aws-oci helper checked an artifact's
// cosign signature with a public key, and what that artifact holds. Only
// the helper writes one, and only after the check succeeded; kube-aws,
// which links no signature code, reads it to decide whether a digest that
// plugins.lock pins may run without asking the helper to check it.
//
// A signature covers the artifact's digest, so the record is about the
// digest and the key, whoever installed the artifact: a cluster on the
// machine that set no key leaves none, and a digest it cached is checked
// with the key before a cluster that sets one runs it.
type Verified struct {
	// Digest is the artifact's (the image index), which cosign signs.
	Digest string `json:"digest"`
	// Key is the fingerprint of the public key the signature verified
	// with ("sha256:" and the hex sha256 of its DER bytes).
	Key string `json:"key"`
	// Name is the plugin the artifact holds.
	Name string `json:"name"`
	// Platforms are every platform's build as the signed index lists
	// them, by os/arch.
	Platforms map[string]Platform `json:"platforms"`
}

// Platform is one platform's build in a Verified record.
type Platform struct {
	Manifest string `json:"manifest"`
	// SHA256 is the executable's (hex).
	SHA256 string `json:"sha256"`
	// Files are the other files' sha256 (hex), by slash path.
	Files map[string]string `json:"files,omitempty"`
}

// verifiedPath is where the record for a digest and a key lives: one file
// per pair, so that two processes recording different keys never race on
// one file.
func (c Cache) verifiedPath(digest, key string) (string, error) {
	d, err := hexOf(digest)
	if err != nil {
		return "", err
	}
	k, err := hexOf(key)
	if err != nil {
		return "", fmt.Errorf("key fingerprint: %w", err)
	}
	return filepath.Join(c.Root, "verified", d+"-"+k+".json"), nil
}

// RecordVerified writes v. Only the kube-aws-oci helper calls it, right
// after the signature of v.Digest verified with the key v.Key.
func (c Cache) RecordVerified(v Verified) error {
	p, err := c.verifiedPath(v.Digest, v.Key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("creating the plugin cache folder %s: %w", filepath.Dir(p), err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(p, b, 0o644)
}

// LookupVerified returns the record that the signature of digest verified
// with the key of fingerprint key, or false when there is none (or it is
// unreadable, or about another digest or key: then it counts as none, and
// the helper checks again).
func (c Cache) LookupVerified(digest, key string) (*Verified, bool) {
	p, err := c.verifiedPath(digest, key)
	if err != nil {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	var v Verified
	if json.Unmarshal(b, &v) != nil || v.Digest != digest || v.Key != key {
		return nil, false
	}
	return &v, true
}
