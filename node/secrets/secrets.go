// Package secrets is the `secrets` step: for every file the secrets plan
// lists, it replaces each ((fact:<name>)) marker by the machine's fact and
// fetches the ciphertext of each secret marker in it from
// roles/<role>/secrets/<sha256 of the marker>, decrypts it with KMS under
// the role's encryption context, and substitutes it structurally
// (package substitute). A file is replaced whole, keeping its mode and
// owner, only once every marker in it is decrypted.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/substitute"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// maxCiphertext bounds a secret object: KMS encrypts at most 4 KiB.
const maxCiphertext = 64 << 10

// Run is the step.
func Run(ctx context.Context, e *agent.Env) error {
	var plan nodeplan.SecretsPlan
	if found, err := e.OptionalPlan(nodeplan.SecretsPath, &plan); err != nil || !found {
		return err
	}
	d := NewDecrypter(e)
	total := 0
	for _, f := range plan.Files {
		n, err := d.File(ctx, f)
		if err != nil {
			return err
		}
		total += n
	}
	e.Logf("substituted %d secret markers in %d files", total, len(plan.Files))
	return nil
}

// NewDecrypter is a Decrypter for the machine's role.
func NewDecrypter(e *agent.Env) *Decrypter {
	return &Decrypter{Env: e, KMS: kms.NewFromConfig(e.AWS), cache: map[string]string{}}
}

// Decrypter fetches and decrypts the secrets of one role, each once.
type Decrypter struct {
	Env   *agent.Env
	KMS   *kms.Client
	cache map[string]string
}

// File substitutes the markers of one file and says how many there were.
func (d *Decrypter) File(ctx context.Context, f nodeplan.SecretFile) (int, error) {
	p := d.Env.Path(f.Path)
	data, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, agent.BadInput(fmt.Errorf("%s is in the secrets plan but no file is there: the userdata must write it", f.Path))
		}
		return 0, err
	}
	info, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	out, n, err := d.Substitute(ctx, f.Path, f.Format, data)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		d.Env.Logf("%s: no marker left (substituted before)", f.Path)
		return 0, nil
	}
	if err := fileutil.WriteAtomic(p, out, info.Mode().Perm()); err != nil {
		return 0, fmt.Errorf("%s: %w", f.Path, err)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if err := os.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
			return 0, fmt.Errorf("%s: keeping its owner: %w", f.Path, err)
		}
	}
	d.Env.Logf("%s: substituted %d markers (%s)", f.Path, n, f.Format)
	return n, nil
}

// Substitute replaces the fact and secret markers of data, content of
// format that name (a path, for messages) names, and says how many there
// were. Errors name the file and the marker, never a value.
func (d *Decrypter) Substitute(ctx context.Context, name string, format nodeplan.Format, data []byte) ([]byte, int, error) {
	var fetchErr, factErr error
	out, n, err := substitute.File(format, data, func(marker string) (string, error) {
		if fact, ok := nodeplan.FactOfMarker(marker); ok {
			v, found := d.Env.Facts.Get(fact)
			if !found {
				_, factErr = d.Env.Facts.Expand("{" + fact + "}")
				return "", factErr
			}
			return v, nil
		}
		v, err := d.Secret(ctx, marker)
		if err != nil {
			fetchErr = err
		}
		return v, err
	})
	switch {
	case factErr != nil:
		// A fact the machine does not have: the render asked for it.
		return nil, 0, agent.BadInput(fmt.Errorf("%s: %w", name, factErr))
	case fetchErr != nil:
		return nil, 0, fmt.Errorf("%s: %w", name, fetchErr)
	case err != nil:
		// The content is not what its declared format says.
		return nil, 0, agent.BadInput(fmt.Errorf("%s (format %s): %w", name, format, err))
	}
	return out, n, nil
}

// Secret returns the plain text of a marker. Errors name the marker and
// the object, never a value.
func (d *Decrypter) Secret(ctx context.Context, marker string) (string, error) {
	if v, ok := d.cache[marker]; ok {
		return v, nil
	}
	s := d.Env.Settings
	key := s.Key(nodeplan.SecretKey(s.Role, marker))
	var plain string
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		blob, err := d.Env.Store.Get(ctx, key, maxCiphertext)
		if err != nil {
			return err
		}
		out, err := d.KMS.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, EncryptionContext: s.EncryptionContext()})
		if err != nil {
			var api smithy.APIError
			if errors.As(err, &api) && (api.ErrorCode() == "InvalidCiphertextException" || api.ErrorCode() == "IncorrectKeyException") {
				return retry.Permanent(fmt.Errorf("decrypting with KMS: %w; the ciphertext was not made for cluster %q and role %q (deploy again)", err, s.Cluster, s.Role))
			}
			return fmt.Errorf("decrypting with KMS: %w", err)
		}
		plain = string(out.Plaintext)
		return nil
	}, d.Env.Retrying(marker))
	if err != nil {
		return "", fmt.Errorf("secret %s (s3://%s/%s): %w", marker, s.Bucket, key, err)
	}
	d.cache[marker] = plain
	return plain, nil
}
