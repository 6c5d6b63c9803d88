package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// A stamp records one build step: the hash of everything the step's output
// depends on, and the files it wrote. A step whose stamp has the same input
// hash and whose files are all still there, unchanged in size and
// modification time, is skipped.
type stamp struct {
	Inputs  string   `json:"inputs"`
	Outputs []output `json:"outputs"`
	// Packages are the Debian packages (name_version_arch) a Debian step
	// extracted: what its layer holds, for the record.
	Packages []string `json:"packages,omitempty"`
	Seconds  float64  `json:"seconds"`
}

type output struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	SHA256  string    `json:"sha256"`
}

// stampFile is where step id's stamp lives.
func stampFile(stateDir, id string) string {
	return filepath.Join(stateDir, "stamps", id+".json")
}

// readStamp returns the stamp of step id if it is fresh: same inputs, and
// every output as it was written. Anything else (no stamp, a stamp from other
// inputs, a missing or touched output, an unreadable stamp) means "build".
func readStamp(stateDir, id, inputs string) (*stamp, bool) {
	b, err := os.ReadFile(stampFile(stateDir, id))
	if err != nil {
		return nil, false
	}
	var s stamp
	if json.Unmarshal(b, &s) != nil || s.Inputs != inputs || len(s.Outputs) == 0 {
		return nil, false
	}
	for _, o := range s.Outputs {
		fi, err := os.Stat(o.Path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != o.Size || !fi.ModTime().Equal(o.ModTime) {
			return nil, false
		}
	}
	return &s, true
}

// writeStamp records the outputs of step id (hashing each) under its inputs.
func writeStamp(stateDir, id, inputs string, paths []string, packages []string, took time.Duration) (*stamp, error) {
	s := &stamp{Inputs: inputs, Packages: packages, Seconds: took.Seconds()}
	for _, p := range paths {
		o, err := describe(p)
		if err != nil {
			return nil, err
		}
		s.Outputs = append(s.Outputs, o)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := fileutil.WriteAtomic(stampFile(stateDir, id), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

func describe(p string) (output, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return output{}, err
	}
	sum, err := fileutil.SHA256(p)
	if err != nil {
		return output{}, err
	}
	return output{Path: p, Size: fi.Size(), ModTime: fi.ModTime(), SHA256: sum}, nil
}

// sha256Of returns the stamp's hash of the output at path p.
func (s *stamp) sha256Of(p string) (string, error) {
	for _, o := range s.Outputs {
		if o.Path == p {
			return o.SHA256, nil
		}
	}
	return "", fmt.Errorf("internal error: step output %s not recorded in its stamp", p)
}

// inputHash hashes a step's input description: a JSON-encodable value
// holding every setting, version and content hash the step depends on.
func inputHash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only maps, slices and strings go in; a failure is a programming
		// error, not something a user can cause.
		panic(fmt.Sprintf("artifacts: input description does not encode: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// treeHash hashes the regular files under dir whose names pass keep: their
// relative paths, modes and contents. It is how a step's inputs name the
// source files (a scratch module, the builder itself).
func treeHash(dir string, keep func(rel string) bool) (string, error) {
	var rels []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			if keep(filepath.ToSlash(rel)) {
				rels = append(rels, rel)
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(rels)
	h := sha256.New()
	for _, rel := range rels {
		sum, err := fileutil.SHA256(filepath.Join(dir, rel))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %s\n", filepath.ToSlash(rel), sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// builderSource keeps the builder's own Go files (not its tests, not the
// scratch modules, not the command that only wires flags).
func builderSource(rel string) bool {
	return !strings.Contains(rel, "/") && strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")
}

// lockState takes the state folder's lock, so that two builds sharing an
// artifact folder (two worktrees, the harness and `make artifacts`) never
// write it at once. It waits for the other build and says so.
func lockState(stateDir string, log io.Writer) (unlock func(), err error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(stateDir, "lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		fmt.Fprintf(log, "waiting for another build that holds %s\n", p)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
