package envfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"plain", "A=1\nB = two words  \n", map[string]string{"A": "1", "B": "two words"}, ""},
		{"comments and blanks", "# c\n  ; d\n\nA=x # not a comment\n", map[string]string{"A": "x # not a comment"}, ""},
		{"single", "A='a \"b\" \\n $c'\n", map[string]string{"A": `a "b" \n $c`}, ""},
		{"double", `A="q\"b\\s\$d\` + "`" + `e \n"`, map[string]string{"A": "q\"b\\s$d`e \\n"}, ""},
		{"double multiline", "A=\"line1\nline2\"\nB=2", map[string]string{"A": "line1\nline2", "B": "2"}, ""},
		{"continuation", "A=\"x\\\ny\"\nB=a\\\nb", map[string]string{"A": "xy", "B": "ab"}, ""},
		{"mixed", `A=pre"mid"'post'`, map[string]string{"A": "premidpost"}, ""},
		{"unquoted escape", `A=a\ b\\c`, map[string]string{"A": `a b\c`}, ""},
		{"empty", "A=\nB=\"\"", map[string]string{"A": "", "B": ""}, ""},
		{"last wins", "A=1\nA=2", map[string]string{"A": "2"}, ""},
		{"no equals", "A=1\nexport B\n", nil, "line 2"},
		{"bad name", "1A=x", nil, "not a variable name"},
		{"unclosed", "A=1\nB=\"x\n\n", nil, "line 2: B: double quote never closed"},
		{"unclosed single", "B='x", nil, "single quote never closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.want {
				if got, ok := f.Lookup(k); !ok || got != want {
					t.Errorf("%s = %q (%v), want %q", k, got, ok, want)
				}
			}
			// Unchanged, the file is written back byte for byte.
			if got := string(f.Bytes()); got != tt.in {
				t.Errorf("round trip:\n%q\n%q", got, tt.in)
			}
		})
	}
}

func TestLines(t *testing.T) {
	f, err := Parse([]byte("# x\nA=\"1\n2\"\nB=3\n"))
	if err != nil {
		t.Fatal(err)
	}
	as := f.Assignments()
	if len(as) != 2 || as[0].Line != 2 || as[1].Line != 4 {
		t.Fatalf("assignments = %+v", as)
	}
}

// hard is a value with every character the formats treat specially.
const hard = "p\"a\\s$HOME`id`'s\nsecond line\\\n\ttab  "

// What Set writes is read back exactly by this parser and by a real shell.
func TestSetRoundTrip(t *testing.T) {
	f, err := Parse([]byte("# keep me\nA=((secret:x/a))\nB='keep this'\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.Assignments()[0].Set(hard)
	out := f.Bytes()
	if !strings.HasPrefix(string(out), "# keep me\nA=\"") || !strings.HasSuffix(string(out), "\nB='keep this'\n") {
		t.Errorf("other lines changed:\n%s", out)
	}
	g, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := g.Lookup("A"); v != hard {
		t.Errorf("parsed back %q, want %q", v, hard)
	}
	if v := shellValue(t, out, "A"); v != hard {
		t.Errorf("sh read %q, want %q", v, hard)
	}
	if v := shellValue(t, out, "B"); v != "keep this" {
		t.Errorf("sh read B = %q", v)
	}
}

func TestEncode(t *testing.T) {
	out := Encode([][2]string{{"X", hard}, {"Y", ""}})
	f, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Lookup("X"); v != hard {
		t.Errorf("X = %q", v)
	}
	if v := shellValue(t, out, "X"); v != hard {
		t.Errorf("sh read %q", v)
	}
}

// shellValue sources the file with /bin/sh and prints one variable.
func shellValue(t *testing.T, file []byte, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(p, file, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/bin/sh", "-c", `. "$1" && printf '%s' "$`+name+`"`, "sh", p).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return string(out)
}
