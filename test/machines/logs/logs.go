// Package logs keeps what each local machine printed: its console (written
// live) and its systemd journal (exported from the machine's overlay when
// the machine ends), one folder per instance under the run's log folder.
package logs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Dir is the run's log folder.
type Dir string

// Console opens (appending) the console log of instance id.
func (d Dir) Console(id string) (*os.File, error) {
	p := filepath.Join(string(d), id)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(p, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// ConsolePath is where Console writes.
func (d Dir) ConsolePath(id string) string { return filepath.Join(string(d), id, "console.log") }

// JournalPath is where ExportJournal writes.
func (d Dir) JournalPath(id string) string { return filepath.Join(string(d), id, "journal.log") }

// ExportJournal writes the journal that the machine of instance id kept
// in its root (root: the machine's overlay upper folder or its mounted
// root) as text, with monotonic times (seconds since the machine started).
func (d Dir) ExportJournal(id, root string) error {
	jd := filepath.Join(root, "var", "log", "journal")
	if _, err := os.Stat(jd); err != nil {
		return fmt.Errorf("machine %s kept no journal under %s", id, jd)
	}
	out, err := os.Create(d.JournalPath(id))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command("journalctl", "--directory="+jd, "--no-pager", "-o", "short-monotonic")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("exporting the journal of %s: %w (see %s)", id, err, d.JournalPath(id))
	}
	return nil
}
