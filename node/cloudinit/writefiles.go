package cloudinit

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// Write writes every write_files entry as cloud-init does: first those without
// defer, then the deferred ones, each in userdata order. root is prepended
// to every path ("/" on a machine). log is told of each file. The first
// failure stops the run and names the entry.
func (u *Userdata) Write(root string, log func(string)) error {
	for _, f := range u.WriteOrder() {
		if err := f.write(root); err != nil {
			return fmt.Errorf("write_files (line %d) %s: %w", f.Line, f.Path, err)
		}
		if log != nil {
			verb := "wrote"
			if f.Append {
				verb = "appended to"
			}
			log(fmt.Sprintf("%s %s (%d bytes, mode %04o)", verb, f.Path, len(f.Content), f.Mode))
		}
	}
	return nil
}

// WriteOrder is the write_files entries in the order Write writes them:
// those without defer, then the deferred ones, each in userdata order.
func (u *Userdata) WriteOrder() []WriteFile {
	out := make([]WriteFile, 0, len(u.WriteFiles))
	for _, deferred := range []bool{false, true} {
		for _, f := range u.WriteFiles {
			if f.Defer == deferred {
				out = append(out, f)
			}
		}
	}
	return out
}

// write is cloud-init's util.write_file and chownbyname: make the parent
// folders, open for write (truncate) or append, write, chmod, chown.
func (f WriteFile) write(root string) error {
	p := filepath.Join(root, f.Path)
	// Owners are looked up first, so an unknown user changes nothing.
	uid, gid, err := ids(f.User, f.Group)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if f.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	// Created owner-only; the chmod below sets the mode asked for, so the
	// content is never readable by others in between.
	fh, err := os.OpenFile(p, flags, 0o600)
	if err != nil {
		return err
	}
	if _, err := fh.Write(f.Content); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Chmod(p, os.FileMode(f.Mode&0o777)|modeBits(f.Mode)); err != nil {
		return err
	}
	if uid != -1 || gid != -1 {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// modeBits maps setuid, setgid and sticky to Go's flags.
func modeBits(m uint32) os.FileMode {
	var out os.FileMode
	if m&0o4000 != 0 {
		out |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		out |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	return out
}

// ids looks up a user and group by name (-1: leave as it is), as Python's
// pwd and grp do; an unknown name is an error, as in cloud-init.
func ids(userName, groupName string) (uid, gid int, err error) {
	uid, gid = -1, -1
	if userName != "" {
		u, err := user.Lookup(userName)
		if err != nil {
			return 0, 0, fmt.Errorf("owner: unknown user %q", userName)
		}
		uid, _ = strconv.Atoi(u.Uid)
	}
	if groupName != "" {
		g, err := user.LookupGroup(groupName)
		if err != nil {
			return 0, 0, fmt.Errorf("owner: unknown group %q", groupName)
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	return uid, gid, nil
}
