package stages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// StateVersion is the version of the state file format.
const StateVersion = 1

// State is .kube-aws/state/<stage>.json: a stage's merged result and the
// hashes of what it was made from, so a later `kube-aws stage <next>` (in
// another CI job, say) can refuse a result that no longer matches.
type State struct {
	Version int         `json:"version"`
	Stage   stage.Name  `json:"stage"`
	Inputs  StateInputs `json:"inputs"`
	Result  StageResult `json:"result"`
}

// StateInputs are the hashes a state was made from.
type StateInputs struct {
	// Config is ConfigHash of cluster.yaml and its plugin config files.
	Config string `json:"config"`
	// Plugins maps every enabled plugin to the sha256 of its executable.
	Plugins map[string]string `json:"plugins"`
	// Previous is the sha256 of the previous stage's state file.
	Previous string `json:"previous,omitempty"`
}

func (s *Session) statePath(name stage.Name) string {
	return filepath.Join(s.Plan.Options.StateDir, string(name)+".json")
}

// writeState persists a stage's result atomically (temp file and rename),
// scrubbed of every plain secret, and returns the sha256 of what it wrote.
func (s *Session) writeState(name stage.Name, prev string, res *StageResult) (string, error) {
	return s.writeStateRedacting(name, prev, res, s.knownSecrets())
}

// knownSecrets are the plain secrets known so far: cluster.yaml's and those
// the plugins generated in the stages run.
func (s *Session) knownSecrets() map[string]string {
	if s.Plan.Config == nil {
		return nil
	}
	return s.Plan.Config.Secrets
}

// writeStateRedacting is writeState with the secrets to scrub given: the
// session's grow after each stage (foldGeneratedSecrets), and a state
// written while the next stage runs is scrubbed of those of its own stage.
func (s *Session) writeStateRedacting(name stage.Name, prev string, res *StageResult, secrets map[string]string) (string, error) {
	hashes, err := s.pluginHashes()
	if err != nil {
		return "", err
	}
	st := State{Version: StateVersion, Stage: name, Inputs: StateInputs{Plugins: hashes, Previous: prev}, Result: *res}
	if s.Plan.Config != nil {
		st.Inputs.Config = s.Plan.Config.Hash
	}
	b, err := encodeState(st)
	if err != nil {
		return "", fmt.Errorf("encoding state of stage %s: %w", name, err)
	}
	b = append(b, '\n')
	if len(secrets) > 0 && s.Plan.Deps.Redact != nil {
		// Belt and braces: Input.Secrets is never serialised and plugins only
		// see markers, but a plain secret must never reach the disk.
		plain := string(b)
		if red := s.Plan.Deps.Redact(plain, secrets); red != plain {
			b = []byte(red)
		}
	}
	p := s.statePath(name)
	if !holdsFile(p, b, 0o600) {
		if err := fileutil.WriteAtomic(p, b, 0o600); err != nil {
			return "", fmt.Errorf("writing state of stage %s: %w", name, err)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// stateWrite is a stage's state being written by startWriteState.
type stateWrite struct {
	done chan struct{}
	// Once done is closed: the sha256 of what was written or the error,
	// and the stage's report with its state and duration.
	hash string
	err  error
	rep  StageReport
}

// startWriteState is writeState in a goroutine of its own. The stage's
// result must not change until it is done; the next stage only reads it.
func (s *Session) startWriteState(name stage.Name, prev string, res *StageResult, rep StageReport, start time.Time) *stateWrite {
	w := &stateWrite{done: make(chan struct{}), rep: rep}
	secrets := s.knownSecrets()
	go func() {
		defer close(w.done)
		w.hash, w.err = s.writeStateRedacting(name, prev, res, secrets)
		if w.err == nil {
			w.rep.State = s.statePath(name)
		}
		w.rep.Duration = time.Since(start)
	}()
	return w
}

// loadCarry reads the state of every stage before name and checks that it
// still matches cluster.yaml, the plugins and each other. It names the
// earliest stage to run again.
func (s *Session) loadCarry(name stage.Name) (*carry, error) {
	c := s.freshCarry()
	idx := name.Index()
	hashes, err := s.pluginHashes()
	if err != nil {
		return nil, &Error{Code: ExitFatal, Msg: err.Error()}
	}
	prevHash := ""
	for _, st := range stage.All[:idx] {
		p := s.statePath(st)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, staleState(st, true, p)
		}
		if err != nil {
			return nil, &Error{Code: ExitFatal, Msg: fmt.Sprintf("reading state of stage %s: %v", st, err)}
		}
		var state State
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&state); err != nil {
			return nil, staleState(st, false, fmt.Sprintf("%s is not valid: %v", p, err))
		}
		if state.Version != StateVersion {
			return nil, staleState(st, false, fmt.Sprintf("%s has version %d, this kube-aws reads version %d", p, state.Version, StateVersion))
		}
		if state.Stage != st {
			return nil, staleState(st, false, fmt.Sprintf("%s holds the state of stage %q", p, state.Stage))
		}
		cfgHash := ""
		if s.Plan.Config != nil {
			cfgHash = s.Plan.Config.Hash
		}
		if state.Inputs.Config != cfgHash {
			return nil, staleState(st, false, s.configName()+" or a plugin config file changed since it ran")
		}
		if why := pluginsChanged(state.Inputs.Plugins, hashes); why != "" {
			return nil, staleState(st, false, why+" since it ran")
		}
		if state.Inputs.Previous != prevHash {
			return nil, staleState(st, false, "it was made from a different result of stage "+string(st.Previous()))
		}
		sum := sha256.Sum256(b)
		prevHash = hex.EncodeToString(sum[:])
		r := state.Result
		switch st {
		case stage.Initialise:
			c.values, c.constructs = r.Values, r.Constructs
			if r.Capabilities != nil {
				c.capabilities = r.Capabilities
			}
		case stage.Render:
			if r.Rendered != nil {
				rd := *r.Rendered
				if !filepath.IsAbs(rd.Dir) {
					rd.Dir = filepath.Join(s.Plan.ClusterDir, rd.Dir)
				}
				if err := verifyRendered(&rd); err != nil {
					e := staleState(stage.Render, false, fmt.Sprintf("the render output changed: %v", err))
					e.Msg = fmt.Sprintf("render output is stale: %v: run `kube-aws stage render` again", err)
					return nil, e
				}
				c.rendered = &rd
			}
		case stage.Deploy:
			c.deploy = r.Deploy
		}
	}
	c.prevHash = prevHash
	return c, nil
}

// freshCarry is where initialise starts: the configuration's values and the
// capabilities chosen at registration.
func (s *Session) freshCarry() *carry {
	c := &carry{capabilities: s.Capabilities}
	if s.Plan.Config != nil {
		c.values = s.Plan.Config.Values
	}
	return c
}

func (s *Session) configName() string {
	if s.Plan.Config != nil {
		return s.Plan.Config.Path
	}
	return "cluster.yaml"
}

// pluginsChanged says which plugin differs between two hash sets, or "".
func pluginsChanged(was, now map[string]string) string {
	var names []string
	for n := range was {
		names = append(names, n)
	}
	for n := range now {
		if _, ok := was[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var why []string
	for _, n := range names {
		w, inWas := was[n]
		h, inNow := now[n]
		switch {
		case !inWas:
			why = append(why, "plugin "+n+" was enabled")
		case !inNow:
			why = append(why, "plugin "+n+" was disabled or removed")
		case w != h:
			why = append(why, "plugin "+n+"'s executable changed")
		}
	}
	return strings.Join(why, ", ")
}

// verifyRendered checks that the render output on disk is what render wrote:
// deploy uploads those files, so an edit after render must not slip through.
func verifyRendered(r *stage.Rendered) error {
	for _, f := range r.Files {
		p := filepath.Join(r.Dir, filepath.FromSlash(f.Path))
		h, err := fileutil.SHA256(p)
		if err != nil {
			return fmt.Errorf("%s is missing", p)
		}
		if h != f.SHA256 {
			return fmt.Errorf("%s changed since render wrote it", p)
		}
	}
	return nil
}

// holdsFile reports whether p is already a regular file with exactly data
// and mode perm, compared byte for byte (a file may have been edited). A
// re-render with nothing changed then leaves its state files and output as
// they are instead of writing, syncing and renaming each again.
func holdsFile(p string, data []byte, perm os.FileMode) bool {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode() != perm || fi.Size() != int64(len(data)) { // a regular file's Mode is its permissions alone
		return false
	}
	b, err := os.ReadFile(p)
	return err == nil && bytes.Equal(b, data)
}
