package cloudinit

import (
	"path"
	"testing"
)

// Any userdata either parses or is an error, never a panic; what parses
// writes only absolute, clean paths and runs only non-empty commands.
func FuzzParse(f *testing.F) {
	f.Add("#cloud-config\nwrite_files:\n- path: a/../b\n  content: x\n  permissions: 0644\n  encoding: gz+b64\nruncmd:\n- [a, 1]\n- b\n")
	f.Add("#cloud-config\nwrite_files: [{path: /x, owner: 'a:', append: yes, defer: on}]\n")
	f.Add("#cloud-config\n")
	f.Fuzz(func(t *testing.T, in string) {
		u, err := Parse([]byte(in))
		if err != nil {
			return
		}
		for _, w := range u.WriteFiles {
			if !path.IsAbs(w.Path) || path.Clean(w.Path) != w.Path {
				t.Fatalf("path %q", w.Path)
			}
		}
		for _, c := range u.RunCmd {
			if c.Argv == nil && c.Shell == "" || c.Argv != nil && len(c.Argv) == 0 {
				t.Fatalf("empty command %+v", c)
			}
		}
	})
}
