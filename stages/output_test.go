package stages

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/test/pemtest"
)

// TestHoldsSecret tries config.SecretSearch on the bytes of files, where
// the middle of a long secret is found first.
func TestHoldsSecret(t *testing.T) {
	const anchorLen = 32 // the length of the middle piece config looks for
	key := pemtest.Key(1)
	off := (len(key) - anchorLen) / 2
	anchor := key[off : off+anchorLen]
	repeated := strings.Repeat("ab", 60)
	for _, tc := range []struct {
		name, content, plain string
	}{
		{"short secret held", "token: s3cr3t-value\n", "s3cr3t-value"},
		{"short secret not held", "token: s3cr3t-valu\n", "s3cr3t-value"},
		{"key alone", key, key},
		{"key at the start", key + "rest", key},
		{"key at the end", "---\nkey: |\n" + key, key},
		{"key in the middle", "a: -----BEGIN\n" + key + "b: -----END\n", key},
		{"key indented, so not held", "key: |\n  " + strings.ReplaceAll(key, "\n", "\n  "), key},
		{"only the middle of the key", "x" + anchor + "y", key},
		{"middle of the key before the key", anchor + key, key},
		{"middle of the key too near the start", key[off:] + key[:off], key},
		{"key less its last byte", key[:len(key)-1], key},
		{"key less its first byte", key[1:], key},
		{"text shorter than the key", "-----BEGIN", key},
		{"empty text", "", key},
		{"repeating secret held", "b" + repeated + "a", repeated},
		{"repeating secret not held", strings.Repeat("ab", 59) + "a", repeated},
		{"repeating secret among its pieces", strings.Repeat("ab", 40) + "x" + strings.Repeat("ab", 70), repeated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := bytes.Contains([]byte(tc.content), []byte(tc.plain))
			held := newHeldSecrets(map[string]string{"((secret:x))": tc.plain, "((secret:other))": "not in any text"})
			marker, got := held.in([]byte(tc.content))
			if got != want || got && marker != "((secret:x))" {
				t.Errorf("held secret %q, %v; bytes.Contains = %v", marker, got, want)
			}
		})
	}
}

// renderedLike is text like the render output: YAML and JSON with many a
// "-----BEGIN" and "-" but no secret.
func renderedLike(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "- path: /etc/kubernetes/pki/node-%d.crt\n  content: |\n    -----BEGIN CERTIFICATE-----\n    MIIBszCCAVmgAwIBAgIRAK-%d\n    -----END CERTIFICATE-----\n", i, i)
	}
	return b.Bytes()
}

// BenchmarkHoldsSecret searches 1 MB of rendered text for ten PEM keys:
// all at once as the output check does, each in turn with the anchored
// search it used before, and with bytes.Contains, which it used first.
func BenchmarkHoldsSecret(b *testing.B) {
	content := renderedLike(1 << 20)
	keys := make([]string, 10)
	secrets := map[string]string{}
	for i := range keys {
		keys[i] = pemtest.Key(uint64(i))
		secrets[fmt.Sprintf("((secret:pki/key%d))", i)] = keys[i]
	}
	b.Run("at once", func(b *testing.B) {
		b.SetBytes(int64(len(content) * len(keys)))
		held := newHeldSecrets(secrets)
		for b.Loop() {
			if _, ok := held.in(content); ok {
				b.Fatal("found")
			}
		}
	})
	b.Run("anchor", func(b *testing.B) {
		b.SetBytes(int64(len(content) * len(keys)))
		text := string(content)
		for b.Loop() {
			for _, k := range keys {
				if config.ContainsSecret(text, k) {
					b.Fatal("found")
				}
			}
		}
	})
	b.Run("contains", func(b *testing.B) {
		b.SetBytes(int64(len(content) * len(keys)))
		for b.Loop() {
			for _, k := range keys {
				if bytes.Contains(content, []byte(k)) {
					b.Fatal("found")
				}
			}
		}
	})
}

// A file the previous output holds with the same content and mode is
// linked, not written again; anything else about it makes a new file, and
// the previous output is never changed.
func TestWriteOutputReusesUnchangedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, prev string) // what happened to the previous file
		mode   string
		reused bool
	}{
		{name: "unchanged", reused: true},
		{name: "unchanged, mode given", mode: "0600", reused: true},
		{name: "mode differs", mode: "0640"},
		{name: "edited by hand", change: func(t *testing.T, prev string) {
			if err := os.WriteFile(prev, []byte("edited!"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "same size, other bytes", change: func(t *testing.T, prev string) {
			if err := os.WriteFile(prev, []byte("CONTENT"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "made setuid", change: func(t *testing.T, prev string) {
			if err := os.Chmod(prev, 0o644|os.ModeSetuid); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "replaced by a symlink", change: func(t *testing.T, prev string) {
			other := filepath.Join(filepath.Dir(filepath.Dir(prev)), "elsewhere")
			if err := os.WriteFile(other, []byte("content"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(prev); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, prev); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			first := []stage.File{{Path: "stacks/a.json", Content: []byte("content"), Plugin: "p", Mode: "0644"}}
			if tc.mode == "0600" {
				first[0].Mode = "0600"
			}
			if _, err := WriteOutput(dir, first, nil, nil); err != nil {
				t.Fatal(err)
			}
			prev := filepath.Join(dir, "stacks", "a.json")
			if tc.change != nil {
				tc.change(t, prev)
			}
			before, err := os.Lstat(prev)
			if err != nil {
				t.Fatal(err)
			}
			second := []stage.File{{Path: "stacks/a.json", Content: []byte("content"), Plugin: "p", Mode: first[0].Mode}}
			if tc.mode != "" {
				second[0].Mode = tc.mode
			}
			// Keep a name on the previous file to compare it after.
			kept := filepath.Join(t.TempDir(), "kept")
			if err := os.Link(prev, kept); err != nil {
				t.Fatal(err)
			}
			if _, err := WriteOutput(dir, second, nil, nil); err != nil {
				t.Fatal(err)
			}
			now, err := os.Lstat(prev)
			if err != nil {
				t.Fatal(err)
			}
			if got := os.SameFile(before, now); got != tc.reused {
				t.Errorf("reused %v, want %v", got, tc.reused)
			}
			if b, err := os.ReadFile(prev); err != nil || string(b) != "content" || !now.Mode().IsRegular() {
				t.Errorf("output holds %q (%v), mode %v", b, err, now.Mode())
			}
			if want := second[0].Mode; now.Mode().Perm().String() != modeString(t, want) {
				t.Errorf("mode %v, want %s", now.Mode(), want)
			}
			after, err := os.Lstat(kept)
			if err != nil {
				t.Fatal(err)
			}
			if after.Mode() != before.Mode() && before.Mode().IsRegular() {
				t.Errorf("the previous file's mode changed from %v to %v", before.Mode(), after.Mode())
			}
		})
	}
}

func modeString(t *testing.T, octal string) string {
	t.Helper()
	m, err := strconv.ParseUint(octal, 8, 32)
	if err != nil {
		t.Fatal(err)
	}
	return os.FileMode(m).String()
}

// An output that already holds exactly what a render writes is left as it
// is: same folder, same files, nothing created or removed. Anything else
// about it (a file or folder added or edited by hand, a mode, a file the new
// render drops, a changed manifest) gets the whole new output, as before.
func TestWriteOutputLeavesAnUnchangedOutputAlone(t *testing.T) {
	files := []stage.File{
		{Path: "stacks/a.json", Content: []byte(`{"a":1}`), Plugin: "p"},
		{Path: "userdata/deep/b.yaml", Content: []byte("b: 2\n"), Plugin: "q", Mode: "0600"},
	}
	versions := map[string]string{"p": "1.0", "q": "1.0"}
	for _, tc := range []struct {
		name     string
		change   func(t *testing.T, dir string)
		files    []stage.File
		versions map[string]string
		kept     bool
	}{
		{name: "nothing changed", kept: true},
		{name: "a file added by hand", change: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "stacks", "extra.json"), "{}")
		}},
		{name: "an empty folder added", change: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a file edited", change: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "stacks", "a.json"), `{"a":2}`)
		}},
		{name: "the manifest edited", change: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ManifestName), "{}\n")
		}},
		{name: "a file's mode changed", change: func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "userdata", "deep", "b.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the folder's mode changed", change: func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the new render drops a file", files: files[:1]},
		{name: "a plugin's version changed", versions: map[string]string{"p": "1.1", "q": "1.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			first, err := WriteOutput(dir, files, versions, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.change != nil {
				tc.change(t, dir)
			}
			before := lstat(t, dir)
			beforeA := lstat(t, filepath.Join(dir, "stacks", "a.json"))
			second, want := files, versions
			if tc.files != nil {
				second = tc.files
			}
			if tc.versions != nil {
				want = tc.versions
			}
			rd, err := WriteOutput(dir, second, want, nil)
			if err != nil {
				t.Fatal(err)
			}
			if kept := os.SameFile(before, lstat(t, dir)); kept != tc.kept {
				t.Errorf("output folder kept %v, want %v", kept, tc.kept)
			}
			if tc.kept && !os.SameFile(beforeA, lstat(t, filepath.Join(dir, "stacks", "a.json"))) {
				t.Error("an unchanged output's file was replaced")
			}
			if tc.kept && !reflect.DeepEqual(rd, first) {
				t.Errorf("kept output reported as %+v, want %+v", rd, first)
			}
			// Whatever happened, the folder now holds exactly a fresh render
			// of the second set, and nothing is left beside it.
			fresh := filepath.Join(t.TempDir(), "out")
			if _, err := WriteOutput(fresh, second, want, nil); err != nil {
				t.Fatal(err)
			}
			if got, exp := readTree(t, dir), readTree(t, fresh); !reflect.DeepEqual(got, exp) {
				t.Errorf("output holds\n%v\nwant\n%v", got, exp)
			}
			if mode := lstat(t, dir).Mode(); mode != lstat(t, fresh).Mode() {
				t.Errorf("output folder's mode %v, want %v", mode, lstat(t, fresh).Mode())
			}
			if entries, err := os.ReadDir(parent); err != nil || len(entries) != 1 {
				t.Errorf("beside the output: %v (%v)", entries, err)
			}
		})
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lstat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// Files are checked on every CPU, but a refused output names the file one
// by one in path order would have: the first by path, whatever its fault,
// and nothing is written.
func TestWriteOutputRefusesTheFirstFaultyFileByPath(t *testing.T) {
	secret := pemtest.Key(7)
	secrets := map[string]string{"((secret:dex/key))": secret}
	ok := func(p string) stage.File {
		return stage.File{Path: p, Content: []byte("fine " + p + "\n"), Plugin: "p"}
	}
	for _, tc := range []struct {
		name  string
		files []stage.File
		want  string
	}{
		{"a secret before a bad mode", []stage.File{
			{Path: "b/mode", Content: []byte("x"), Mode: "999", Plugin: "p"},
			{Path: "a/secret", Content: []byte("key: " + secret), Plugin: "dex"},
		}, "rendered file a/secret of plugin dex holds the plain text of secret ((secret:dex/key))"},
		{"a bad mode before a secret", []stage.File{
			{Path: "z/secret", Content: []byte("key: " + secret), Plugin: "dex"},
			{Path: "m/mode", Content: []byte("x"), Mode: "999", Plugin: "p"},
		}, `rendered file m/mode of plugin p: mode "999" is not an octal permission like 0644`},
		{"a path out of the folder first", []stage.File{
			{Path: "y/secret", Content: []byte("key: " + secret), Plugin: "dex"},
			{Path: "../escape", Content: []byte("x"), Plugin: "q"},
		}, `rendered file "../escape" of plugin q`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			for i := range 200 { // enough files for every worker to take some
				files = append(files, ok(fmt.Sprintf("pool%03d/stack.json", i)))
			}
			for range 20 {
				dir := filepath.Join(t.TempDir(), "rendered")
				_, err := WriteOutput(dir, files, map[string]string{"p": "1"}, secrets)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v; want it to say %q", err, tc.want)
				}
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Fatalf("a refused output left %s behind (%v)", dir, err)
				}
			}
		})
	}
}

// BenchmarkWriteOutputUnchanged is a re-render of 100 node pools' files
// (214 files, 2.5 MB) with nothing changed and ten secrets to look for:
// every file is searched, hashed and compared with the output's.
func BenchmarkWriteOutputUnchanged(b *testing.B) {
	secrets := map[string]string{}
	for i := range 10 {
		secrets[fmt.Sprintf("((secret:pki/key%d))", i)] = pemtest.Key(uint64(1000 + i))
	}
	var files []stage.File
	for i := range 214 {
		var content strings.Builder
		for content.Len() < 12_000 {
			content.WriteString(pemtest.Key(uint64(i)))
		}
		files = append(files, stage.File{Path: fmt.Sprintf("stacks/pool%03d.json", i), Content: []byte(content.String()), Plugin: "cloudformation"})
	}
	dir := filepath.Join(b.TempDir(), "rendered")
	if _, err := WriteOutput(dir, files, map[string]string{"cloudformation": "1"}, secrets); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := WriteOutput(dir, files, map[string]string{"cloudformation": "1"}, secrets); err != nil {
			b.Fatal(err)
		}
	}
}
