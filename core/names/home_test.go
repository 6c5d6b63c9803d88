package names

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A name one plugin relies on and another writes has one home, where a
// change reaches every producer and consumer at once: if two copies drift,
// machines cannot decrypt their secrets, a selector misses its nodes, a
// deploy misses its endpoint. homeRules are those names as Go string
// literals, each with the folders that may write it; TestOneHome fails when
// one is written anywhere else. Tests may pin a name's value in what they
// expect (a policy's JSON, a tag), so only code is scanned, unless the rule
// says tests too: the pki plugin's private store is its own, in tests as in
// code.
var homeRules = []homeRule{
	{literal: "kube-aws:cluster", contains: true, homes: []string{"core/names"},
		use: "names.TagCluster, names.EncryptionContext or names.EncryptionContextCondition"},
	{literal: "kube-aws:role", contains: true, homes: []string{"core/names"},
		use: "names.EncryptionContext, names.EncryptionContextCondition or names.TagRole"},
	{literal: "credentials", homes: []string{"core/names"}, use: "names.CredentialsDir"},
	{literal: "/etc/kubernetes/pki", contains: true, homes: []string{"core/names"}, use: "names.PKIDir and the names.PKI* files"},
	{literal: "node.kube-aws.io/role", contains: true, homes: []string{"core/names"}, use: "names.LabelRole"},
	{literal: "node-role.kubernetes.io/control-plane", contains: true, homes: []string{"core/names"}, use: "names.TaintControlPlane"},
	{literal: "nodepool-", homes: []string{"core/names"}, use: "names.NodePoolStack, names.NodePoolRole or names.NodePoolOf"},
	// The API endpoint output: one name, and the one list of the stack
	// outputs deploy lifts (names.ClusterOutput).
	{literal: "APIEndpoint", homes: []string{"core/names"}, use: "names.OutputAPIEndpoint or names.ClusterOutputAPIEndpoint"},
	{literal: "APIEndpointURL", elsewhere: true, homes: []string{"core/names"}, use: "names.OutputAPIEndpoint (deploy accepts only names.ClusterOutput's names)"},
	{literal: "APIEndpointName", elsewhere: true, homes: []string{"core/names"}, use: "names.OutputAPIEndpoint (deploy accepts only names.ClusterOutput's names)"},
	{literal: "APIServerURL", elsewhere: true, homes: []string{"core/names"}, use: "names.OutputAPIEndpoint (deploy accepts only names.ClusterOutput's names)"},
	// The pki plugin's store of generated secrets (credentials/pki/) is
	// its own: nothing else names the plugin in code, or opens its files
	// in code or tests (filepath.Join("credentials", "pki", ...) included);
	// the admin credential comes through the admin-credential operation.
	{literal: "pki", homes: []string{"builtin/pki"}, use: "the admin-credential operation (stages.Session.AdminCredential)"},
	{literal: "credentials/pki", contains: true, tests: true, elsewhere: true, homes: []string{"builtin/pki"}, use: "the admin-credential operation (stages.Session.AdminCredential)"},
	{literal: "admin.crt", tests: true, homes: []string{"builtin/pki"}, use: "the admin-credential operation (stages.Session.AdminCredential)"},
	{literal: "admin.key", tests: true, homes: []string{"builtin/pki"}, use: "the admin-credential operation (stages.Session.AdminCredential)"},
}

func TestOneHome(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository's root: %v", err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			// Hidden folders (.git, .venv, .kube-aws) and build outputs
			// hold no source of the project.
			if path != root && (strings.HasPrefix(d.Name(), ".") || rel == "bin" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || rel == "core/names/home_test.go" {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		isTest := strings.HasSuffix(rel, "_test.go") || strings.Contains("/"+rel, "/testdata/")
		for _, lit := range stringLiterals(src) {
			for _, r := range homeRules {
				if (isTest && (!r.tests || strings.ContainsAny(lit.value, " \t\n"))) || inHome(rel, r.homes) {
					continue
				}
				if r.matches(lit.value) {
					t.Errorf("%s:%d: %q is written outside its home (%s): use %s", rel, lit.line, lit.value, strings.Join(r.homes, ", "), r.use)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files under %s: not the repository", files, root)
	}
}

// Every rule's home still writes its literal, unless the rule says
// elsewhere: else the rule guards a name that moved, and should move with
// it.
func TestEveryHomeHoldsItsName(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, r := range homeRules {
		if r.elsewhere {
			continue
		}
		found := false
		for _, home := range r.homes {
			filepath.WalkDir(filepath.Join(root, filepath.FromSlash(home)), func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
					return err
				}
				src, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for _, lit := range stringLiterals(src) {
					found = found || r.matches(lit.value)
				}
				return nil
			})
		}
		if !found {
			t.Errorf("no code in %s writes %q: move the rule with the name", strings.Join(r.homes, ", "), r.literal)
		}
	}
}

// homeRule is one name and its home.
type homeRule struct {
	literal string
	// contains: the literal also counts inside a longer one
	// ("kms:EncryptionContext:kube-aws:cluster").
	contains bool
	// tests: test files are scanned too, for the literal as a path (a
	// message a test expects, with spaces, is no path).
	tests bool
	// elsewhere: the home need not write the literal itself (it builds it,
	// or the literal is a spelling no longer accepted).
	elsewhere bool
	// homes are the folders (slash-separated, from the repository's root)
	// that may write it.
	homes []string
	use   string
}

func (r homeRule) matches(lit string) bool {
	return lit == r.literal || (r.contains && strings.Contains(lit, r.literal))
}

func inHome(rel string, homes []string) bool {
	for _, h := range homes {
		if strings.HasPrefix(rel, h+"/") {
			return true
		}
	}
	return false
}

type literal struct {
	value string
	line  int
}

// stringLiterals are the Go string literals of src, unquoted (comments
// and identifiers are not names written again). Literals that follow each
// other separated by commas are also given joined by "/", as
// filepath.Join("credentials", "pki") would join them.
func stringLiterals(src []byte) []literal {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var out, run []literal
	endRun := func() {
		if len(run) > 1 {
			parts := make([]string, len(run))
			for i, l := range run {
				parts[i] = l.value
			}
			out = append(out, literal{value: strings.Join(parts, "/"), line: run[0].line})
		}
		run = nil
	}
	afterComma := false
	for {
		pos, tok, lit := s.Scan()
		switch {
		case tok == token.EOF:
			endRun()
			return out
		case tok == token.STRING:
			v, err := strconv.Unquote(lit)
			if err != nil {
				endRun()
				continue
			}
			l := literal{value: v, line: fset.Position(pos).Line}
			out = append(out, l)
			if !afterComma {
				endRun()
			}
			run = append(run, l)
			afterComma = false
			continue
		case tok == token.COMMA && len(run) > 0 && !afterComma:
			afterComma = true
			continue
		}
		endRun()
		afterComma = false
	}
}

// The scan finds literals, and paths joined from literals, where they are
// written, and not in comments.
func TestStringLiterals(t *testing.T) {
	src := []byte("package p\n// \"kube-aws:cluster\" in a comment\nvar a = filepath.Join(dir, \"credentials\", \"pki\",\n\t\"ca.crt\")\nvar b = map[string]string{\"x\": \"y\"}\nvar c = f(\"one\", g(\"two\"))\n")
	var got []string
	for _, l := range stringLiterals(src) {
		got = append(got, strconv.Itoa(l.line)+":"+l.value)
	}
	want := "3:credentials 3:pki 4:ca.crt 3:credentials/pki/ca.crt 5:x 5:y 6:one 6:two"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
}
