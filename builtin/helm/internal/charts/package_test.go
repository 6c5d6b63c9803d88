package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// TestPackageMatchesHelm: Package writes, byte for byte, what helm package
// (chartutil.Save) writes with every entry's time fixed, for every chart
// kube-aws ships and the test charts, including one with a dependency. A
// Helm upgrade that changes what a package holds fails here.
func TestPackageMatchesHelm(t *testing.T) {
	dirs, err := filepath.Glob("../../../../builtin/*/internal/*/charts/*")
	if err != nil {
		t.Fatal(err)
	}
	contrib, _ := filepath.Glob("../../../../contrib/plugins/*/charts/*")
	tests, _ := filepath.Glob("../../testdata/charts/*")
	dirs = append(append(dirs, contrib...), tests...)
	if len(dirs) < 10 {
		t.Fatalf("found only %d charts: %v", len(dirs), dirs)
	}
	withDep, err := loader.Load(testChart(t, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := loader.Load(testChart(t, "schema"))
	if err != nil {
		t.Fatal(err)
	}
	withDep.AddDependency(sub)
	cases := map[string]*chart.Chart{"hello with schema as a dependency": withDep}
	for _, d := range dirs {
		ch, err := loader.Load(d)
		if err != nil {
			continue // the test charts that do not load are tested elsewhere
		}
		cases[d] = ch
	}
	for name, ch := range cases {
		t.Run(name, func(t *testing.T) {
			want := helmPackage(t, ch)
			got, err := Package(ch)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Package differs from chartutil.Save with fixed times (%d bytes against %d)", len(got), len(want))
			}
		})
	}
}

// helmPackage is chartutil.Save's package with every entry rewritten with
// a fixed time and the PAX format, keeping the entries' order, names, modes
// and contents and the gzip header: what Package must produce.
func helmPackage(t *testing.T, ch *chart.Chart) []byte {
	t.Helper()
	file, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Header = gzip.Header{Comment: zr.Header.Comment, Extra: zr.Header.Extra, Name: zr.Header.Name, OS: zr.Header.OS}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: h.Typeflag, Name: h.Name, Linkname: h.Linkname, Mode: h.Mode,
			Size: int64(len(body)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
