package cpuprofile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStart(t *testing.T) {
	tmp := t.TempDir()
	notADir := filepath.Join(tmp, "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		dir      string // the value of Env; "" leaves it unset
		profiles int    // files expected in dir afterwards
	}{
		{"unset: no profile", "", 0},
		{"a folder: one profile", filepath.Join(tmp, "profiles"), 1},
		{"a folder that does not exist yet is made", filepath.Join(tmp, "a", "b"), 1},
		{"not a folder: the process runs unprofiled", notADir, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dir != "" {
				t.Setenv(Env, tt.dir)
			} else {
				t.Setenv(Env, "")
			}
			stop := Start()
			sum := 0
			for i := 0; i < 1e6; i++ {
				sum += i
			}
			_ = sum
			stop()
			if tt.profiles < 0 {
				return
			}
			if tt.dir == "" {
				return
			}
			files, err := os.ReadDir(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != tt.profiles {
				t.Fatalf("%d files in %s, want %d", len(files), tt.dir, tt.profiles)
			}
			if fi, err := files[0].Info(); err != nil || fi.Size() == 0 {
				t.Errorf("profile %s is empty (%v)", files[0].Name(), err)
			}
		})
	}
}
