package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sparse makes a file of the given size without writing its bytes: a file
// refused from its size is never read, so its content does not matter.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A configuration file over the limit is refused from its size, with the
// size in the message, before a byte of it is read: a 50 MiB cluster.yaml
// costs kilobytes, not the gigabyte that parsing it took.
func TestFilesOverTheLimitAreRefusedFromTheirSize(t *testing.T) {
	dir := t.TempDir()
	const big = 50 << 20
	valid := readValid(t)
	withConfigFile := func(file string) string {
		return strings.Replace(valid, "\nplugins:\n  dex:\n", "\nplugins:\n  dex:\n    configFiles: ["+file+"]\n", 1)
	}
	atLimit := "issuer: x\n" + "# " + strings.Repeat("x", MaxConfigFileSize-len("issuer: x\n")-3) + "\n"
	if len(atLimit) != MaxConfigFileSize {
		t.Fatalf("fixture is %d bytes, want %d", len(atLimit), MaxConfigFileSize)
	}
	writeFile(t, dir, "at-limit.yaml", atLimit)
	writeFile(t, dir, "over-limit.yaml", atLimit+"#\n")
	sparse(t, filepath.Join(dir, "huge.yaml"), big)

	for _, tc := range []struct {
		name, cluster string // cluster: the content of cluster.yaml, or "" for a 50 MiB one
		path, msg     string // the diagnostic expected; msg "" for none
	}{
		{"cluster.yaml of 50 MiB", "", "", "cluster.yaml is not read: it is 50.0 MiB, over the 128 KiB limit"},
		{"plugin config file of 50 MiB", withConfigFile("huge.yaml"), "plugins.dex.configFiles[0]",
			"plugin config file huge.yaml is not read: it is 50.0 MiB, over the 128 KiB limit"},
		{"plugin config file one line over the limit", withConfigFile("over-limit.yaml"), "plugins.dex.configFiles[0]",
			"it is 128.0 KiB, over the 128 KiB limit"},
		{"a device read up to the limit", withConfigFile("/dev/zero"), "plugins.dex.configFiles[0]",
			"plugin config file /dev/zero is not read: it is larger than the 128 KiB limit (read up to the limit)"},
		{"plugin config file at the limit", withConfigFile("at-limit.yaml"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "cluster.yaml")
			if tc.cluster == "" {
				sparse(t, path, big)
			} else {
				writeFile(t, dir, "cluster.yaml", tc.cluster)
			}
			var (
				c     *Cluster
				diags []string
				err   error
			)
			bytes := allocated(func() {
				cl, ds, lerr := Load(path)
				c, err = cl, lerr
				if err != nil {
					return
				}
				ApplyDefaults(c)
				ds = append(ds, Validate(c, path)...)
				_, vd := EffectiveValues(c, dir)
				for _, d := range append(ds, vd...) {
					diags = append(diags, d.Path+": "+d.Message)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.msg == "" {
				if len(diags) != 0 {
					t.Fatalf("a file at the limit is read: %v", diags)
				}
				return
			}
			if len(diags) != 1 || !strings.HasPrefix(diags[0], tc.path+": ") || !strings.Contains(diags[0], tc.msg) {
				t.Fatalf("want one diagnostic %q at %q, got %q", tc.msg, tc.path, diags)
			}
			// A file refused from its size is not read: what Load and the
			// rest cost does not grow with it.
			if strings.Contains(tc.msg, "50.0 MiB") && bytes > 2<<20 {
				t.Fatalf("refusing a 50 MiB file allocated %d bytes: it was read", bytes)
			}
		})
	}
}
