// Package secrets is the `secrets` step: for every file the secrets plan
// lists, it replaces each ((fact:<name>)) marker by the machine's fact and
// fetches the ciphertext of each secret marker in it from
// roles/<role>/secrets/<sha256 of the marker>, decrypts it with KMS under
// the role's encryption context, and substitutes it structurally
// (package substitute). Check does all of that in memory, so a file is
// replaced whole, keeping its mode and owner, only once every marker of
// every listed file is decrypted; a file with no marker left is current.
package secrets

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/node/substitute"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// maxCiphertext bounds a secret object: KMS encrypts at most 4 KiB.
const maxCiphertext = 64 << 10

// Step is the step.
type Step struct{}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{} }

func (*Step) Name() string { return nodeplan.StepSecrets }

func (*Step) Flags(*flag.FlagSet) {}

// substituted is a file's content with its markers substituted, to write.
type substituted struct {
	file    nodeplan.SecretFile
	content []byte
	markers int
	info    os.FileInfo
}

// Check substitutes every listed file in memory (fetching and decrypting
// its secrets) and returns a change for each that holds markers.
func (*Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.SecretsPlan
	if found, err := e.OptionalPlan(nodeplan.SecretsPath, &plan); err != nil || !found {
		return nil, err
	}
	d := NewDecrypter(e)
	var changes step.Changes
	for _, f := range plan.Files {
		p := e.Path(f.Path)
		info, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, agent.BadInput(fmt.Errorf("%s is in the secrets plan but no file is there: the userdata must write it", f.Path))
		}
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out, n, err := d.Substitute(ctx, f.Path, f.Format, data)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			e.Logf("%s: no marker left (substituted before)", f.Path)
			continue
		}
		changes = append(changes, step.Change{Action: "substitute", Target: f.Path, Detail: fmt.Sprintf("%d markers (%s)", n, f.Format),
			Data: &substituted{file: f, content: out, markers: n, info: info}})
	}
	return changes, nil
}

// Apply writes each substituted file, keeping its mode and owner.
func (*Step) Apply(_ context.Context, e *agent.Env, changes step.Changes) error {
	total := 0
	for _, c := range changes {
		s := c.Data.(*substituted)
		p := e.Path(s.file.Path)
		if err := fileutil.WriteAtomic(p, s.content, s.info.Mode().Perm()); err != nil {
			return fmt.Errorf("%s: %w", s.file.Path, err)
		}
		if st, ok := s.info.Sys().(*syscall.Stat_t); ok {
			if err := os.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("%s: keeping its owner: %w", s.file.Path, err)
			}
		}
		e.Logf("%s: substituted %d markers (%s)", s.file.Path, s.markers, s.file.Format)
		total += s.markers
	}
	e.Logf("substituted %d secret markers in %d files", total, len(changes))
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
