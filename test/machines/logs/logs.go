// Package logs keeps what each local machine printed: its console (written
// live), its systemd journal and its pods' logs (copied from the machine's
// overlay when the machine ends), one folder per instance under the run's
// log folder.
package logs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// PodsPath is where ExportPodLogs copies the pods' logs of instance id.
func (d Dir) PodsPath(id string) string { return filepath.Join(string(d), id, "pods") }

// podNamespaces are the namespaces whose pods' logs are kept: the
// cluster's own (flannel's routes, kube-proxy's rules, the control plane),
// what a failure of the network or the control plane is read from. The
// machines' journals do not have them: the kubelet writes them to files.
var podNamespaces = []string{"kube-system_", "kube-flannel_"}

// maxPodLog is how much of one container log file is kept: its end.
const maxPodLog = 4 << 20

// ExportPodLogs copies the container logs the kubelet kept in the
// machine's root (root/var/log/pods/<namespace>_<pod>_<uid>/<container>/
// <restart>.log) for the cluster's own namespaces to PodsPath(id), in the
// same layout, keeping the last 4 MiB of each file. A machine without
// pods has nothing to copy.
func (d Dir) ExportPodLogs(id, root string) error {
	src := filepath.Join(root, "var", "log", "pods")
	pods, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("machine %s: %w", id, err)
	}
	var errs []error
	for _, pod := range pods {
		keep := false
		for _, ns := range podNamespaces {
			keep = keep || strings.HasPrefix(pod.Name(), ns)
		}
		if !keep || !pod.IsDir() {
			continue
		}
		err := filepath.WalkDir(filepath.Join(src, pod.Name()), func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() || !strings.HasSuffix(p, ".log") {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			return copyTail(p, filepath.Join(d.PodsPath(id), rel), maxPodLog)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("machine %s: pod logs of %s: %w", id, pod.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// copyTail copies the last max bytes of src to dst.
func copyTail(src, dst string, max int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if st.Size() > max {
		if _, err := in.Seek(st.Size()-max, io.SeekStart); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
