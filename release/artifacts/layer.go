package artifacts

import (
	"archive/tar"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// epoch is the time of every file and image the builder makes: identical
// inputs give byte-identical layers, hence identical digests, so a machine
// that already holds a layer never fetches it again.
var epoch = time.Unix(0, 0).UTC()

// entry is one file, folder or symlink of a layer.
type entry struct {
	path     string // absolute, slash-separated path in the image
	typ      byte   // tar.TypeReg, tar.TypeDir or tar.TypeSymlink
	mode     int64  // permission bits (with setuid/setgid/sticky)
	uid, gid int
	src      string // TypeReg: host file to copy
	data     []byte // TypeReg: content when src is empty
	link     string // TypeSymlink: target
	caps     uint64 // TypeReg: file capabilities, permitted and effective
}

// capNetBindService is CAP_NET_BIND_SERVICE's bit (linux/capability.h).
const capNetBindService = 1 << 10

// vfsCapData encodes a security.capability xattr the way `setcap caps=+ep`
// writes it: VFS_CAP_REVISION_2 with the effective flag, permitted = caps,
// nothing inheritable.
func vfsCapData(caps uint64) string {
	const revision2, flagEffective = 0x02000000, 0x000001
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], revision2|flagEffective)
	binary.LittleEndian.PutUint32(b[4:], uint32(caps))      // permitted, low word
	binary.LittleEndian.PutUint32(b[12:], uint32(caps>>32)) // permitted, high word
	return string(b)
}

// writeLayer writes entries as a zstd-compressed tar to p, sorted by path,
// with every missing parent folder added (root-owned, 0755), owned by
// uid/gid as given and dated epoch.
//
// zstd rather than gzip because every machine decompresses each of its
// layers at boot, on the path to its goal: containerd decompresses these
// layers in less than half the CPU of the same layers in gzip, and they are
// smaller (docs/artifacts.md has the figures). One encoder goroutine, so
// that the bytes never depend on the machine that built them.
func writeLayer(p string, entries []entry) error {
	return writeTar(p, withParents(entries), true)
}

// writeTar writes entries in their order as a tar to p, zstd-compressed or
// not; a failure leaves no file.
func writeTar(p string, entries []entry, compress bool) (err error) {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
		}
	}()
	var w io.Writer = f
	var zw *zstd.Encoder
	if compress {
		if zw, err = zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1)); err != nil {
			return err
		}
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return fmt.Errorf("%s: %s: %w", p, e.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if zw != nil {
		return zw.Close()
	}
	return nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	name := strings.TrimPrefix(e.path, "/")
	hdr := &tar.Header{
		Name:     name,
		Typeflag: e.typ,
		Mode:     e.mode,
		Uid:      e.uid,
		Gid:      e.gid,
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	switch e.typ {
	case tar.TypeDir:
		hdr.Name += "/"
		return tw.WriteHeader(hdr)
	case tar.TypeSymlink:
		hdr.Linkname = e.link
		return tw.WriteHeader(hdr)
	case tar.TypeReg:
	default:
		return fmt.Errorf("internal error: tar type %q", e.typ)
	}
	if e.caps != 0 {
		hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": vfsCapData(e.caps)}
	}
	if e.src == "" {
		hdr.Size = int64(len(e.data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
	src, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, src)
	if err == nil && n != hdr.Size {
		err = fmt.Errorf("%s changed size while being read", e.src)
	}
	return err
}

// withParents sorts entries by path and adds every parent folder that is not
// an entry itself.
func withParents(entries []entry) []entry {
	have := map[string]bool{}
	for _, e := range entries {
		have[e.path] = true
	}
	out := append([]entry(nil), entries...)
	for _, e := range entries {
		for d := path.Dir(e.path); d != "/" && d != "." && !have[d]; d = path.Dir(d) {
			have[d] = true
			out = append(out, entry{path: d, typ: tar.TypeDir, mode: 0o755})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// treeEntries lists a folder (an extracted Debian tree) as layer entries,
// root-owned, keeping modes and symlinks. Hard links become separate copies.
func treeEntries(root string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{path: "/" + filepath.ToSlash(rel), mode: int64(fi.Mode().Perm())}
		if fi.Mode()&fs.ModeSetuid != 0 {
			e.mode |= 0o4000
		}
		if fi.Mode()&fs.ModeSetgid != 0 {
			e.mode |= 0o2000
		}
		if fi.Mode()&fs.ModeSticky != 0 {
			e.mode |= 0o1000
		}
		switch {
		case fi.IsDir():
			e.typ = tar.TypeDir
		case fi.Mode()&fs.ModeSymlink != 0:
			e.typ = tar.TypeSymlink
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			e.typ, e.src = tar.TypeReg, p
		default:
			// Device nodes and fifos have no place in an image layer.
			return nil
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// writeTree writes the folder root (an OCI image layout) to p as an
// uncompressed tar with the paths relative to root, in path order, root-owned
// and dated epoch: the same layout always gives the same archive.
func writeTree(p, root string) error {
	entries, err := treeEntries(root)
	if err != nil {
		return err
	}
	return writeTar(p, entries, false)
}
