package oci

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Package is a plugin on disk, ready to push: for every platform, its
// executable and the files beside it.
type Package struct {
	// Dir is the folder given to `kube-aws plugins push`.
	Dir string
	// Platforms by os/arch.
	Platforms map[string]*PackagePlatform
}

// PackagePlatform is one platform's plugin folder.
type PackagePlatform struct {
	// Dir is the folder holding the executable.
	Dir string
	// Executable is the executable's name in Dir.
	Executable string
	// Files are the other files, by slash path relative to Dir, with
	// their mode.
	Files map[string]fs.FileMode
	// Mode is the executable's.
	Mode fs.FileMode
}

// HostPlatform is the os/arch kube-aws runs on.
func HostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// platformDir is a folder named for a platform: linux-amd64, darwin-arm64.
var platformDir = regexp.MustCompile(`^(aix|android|darwin|dragonfly|freebsd|illumos|ios|js|linux|netbsd|openbsd|plan9|solaris|wasip1|windows)-([a-z0-9]+)$`)

// ReadPackage reads a plugin folder for pushing. Two layouts:
//
//   - DIR/<os>-<arch>/ for every platform (linux-amd64, darwin-arm64...),
//     each a plugin folder; platforms must then be empty;
//   - DIR itself a plugin folder, pushed for each of platforms (the host's
//     when none is given): a script plugin runs anywhere its interpreter
//     does; a compiled executable is checked to be for each platform.
//
// A plugin folder holds the executable (the file named like the folder,
// or its only executable file) and any files beside it, Python byte-code
// caches excepted.
func ReadPackage(dir string, platforms []string) (*Package, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("reading the plugin folder: %w", err)
	}
	pkg := &Package{Dir: abs, Platforms: map[string]*PackagePlatform{}}
	var pdirs, others []string
	for _, e := range entries {
		if e.IsDir() && platformDir.MatchString(e.Name()) {
			pdirs = append(pdirs, e.Name())
		} else {
			others = append(others, e.Name())
		}
	}
	if len(pdirs) > 0 {
		if len(platforms) > 0 {
			return nil, fmt.Errorf("%s has a folder per platform (%s), so --platform is not needed: the folders say which platforms to push", abs, strings.Join(pdirs, ", "))
		}
		if len(others) > 0 {
			return nil, fmt.Errorf("%s has a folder per platform (%s) and other files (%s): put every file of a platform's plugin inside its folder", abs, strings.Join(pdirs, ", "), strings.Join(others, ", "))
		}
		for _, d := range pdirs {
			m := platformDir.FindStringSubmatch(d)
			pp, err := readPlatformDir(filepath.Join(abs, d), "")
			if err != nil {
				return nil, err
			}
			pkg.Platforms[m[1]+"/"+m[2]] = pp
		}
	} else {
		if len(platforms) == 0 {
			platforms = []string{HostPlatform()}
		}
		pp, err := readPlatformDir(abs, filepath.Base(abs))
		if err != nil {
			return nil, err
		}
		for _, p := range platforms {
			if _, err := parsePlatform(p); err != nil {
				return nil, err
			}
			pkg.Platforms[p] = pp
		}
	}
	for p, pp := range pkg.Platforms {
		if err := checkExecutable(filepath.Join(pp.Dir, pp.Executable), p); err != nil {
			return nil, err
		}
	}
	return pkg, nil
}

// PlatformNames lists the package's platforms, sorted.
func (p *Package) PlatformNames() []string { return slices.Sorted(maps.Keys(p.Platforms)) }

// Runnable is an executable of the package that runs on this machine, to
// ask the plugin for its info: the build for this platform, else a script
// (which runs wherever its interpreter does).
func (p *Package) Runnable() (string, error) {
	if hp, ok := p.Platforms[HostPlatform()]; ok {
		return filepath.Join(hp.Dir, hp.Executable), nil
	}
	for _, pl := range p.PlatformNames() {
		pp := p.Platforms[pl]
		exe := filepath.Join(pp.Dir, pp.Executable)
		if isScript(exe) {
			return exe, nil
		}
	}
	goos, goarch, _ := strings.Cut(HostPlatform(), "/")
	return "", fmt.Errorf("%s has builds for %s but none for this machine (%s): push starts the plugin to read its name, version and stages, so add a %s-%s build (GOOS=%s GOARCH=%s go build)",
		p.Dir, strings.Join(p.PlatformNames(), ", "), HostPlatform(), goos, goarch, goos, goarch)
}

func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == "#!"
}

// Rename makes name the executable of every platform: the name the plugin
// gave itself, which must be the executable's file name on every platform
// (kube-aws starts the file named after the plugin).
func (p *Package) Rename(name string) error {
	for _, pl := range p.PlatformNames() {
		pp := p.Platforms[pl]
		if pp.Executable != name {
			return fmt.Errorf("the plugin calls itself %q, but its executable for %s is %s: name the executable %s on every platform",
				name, pl, filepath.Join(pp.Dir, pp.Executable), name)
		}
	}
	return nil
}

func readPlatformDir(dir, preferred string) (*PackagePlatform, error) {
	pp := &PackagePlatform{Dir: dir, Files: map[string]fs.FileMode{}}
	var execs []string
	err := fileutil.WalkPluginFiles(dir, func(path, name string, d fs.DirEntry) error {
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: a plugin in a registry is plain files; copy the file it points to", path)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		pp.Files[name] = fi.Mode().Perm()
		if !strings.Contains(name, "/") && fi.Mode()&0o111 != 0 {
			execs = append(execs, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(execs)
	switch {
	case preferred != "" && pp.Files[preferred]&0o111 != 0:
		pp.Executable = preferred
	case len(execs) == 1:
		pp.Executable = execs[0]
	case len(execs) == 0:
		return nil, fmt.Errorf("%s holds no executable file: build the plugin into it (go build -o %s/NAME .), or chmod +x the plugin's entry script", dir, dir)
	default:
		return nil, fmt.Errorf("%s holds several executable files (%s): name the plugin's executable like the folder, or chmod -x the others", dir, strings.Join(execs, ", "))
	}
	pp.Mode = pp.Files[pp.Executable]
	delete(pp.Files, pp.Executable)
	return pp, nil
}

// checkExecutable refuses an executable compiled for another platform than
// the one it is pushed for. A script (#!) runs wherever its interpreter
// does.
func checkExecutable(path, platform string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return fmt.Errorf("%s is not a plugin executable: %v", path, err)
	}
	if bytes.HasPrefix(head, []byte("#!")) {
		return nil
	}
	goos, goarch, err := binaryPlatform(f)
	if err != nil {
		return fmt.Errorf("%s is neither a script (#!) nor an executable kube-aws can read: %v", path, err)
	}
	if got := goos + "/" + goarch; got != platform && !strings.HasPrefix(platform, got+"/") {
		return fmt.Errorf("%s is an executable for %s, not for %s: build it with GOOS=%s GOARCH=%s, or push it for %s",
			path, got, platform, strings.Split(platform, "/")[0], strings.Split(platform, "/")[1], got)
	}
	return nil
}

// binaryPlatform reads the os and architecture an executable is built for,
// in Go's names.
func binaryPlatform(r io.ReaderAt) (string, string, error) {
	if ef, err := elf.NewFile(r); err == nil {
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_386: "386", elf.EM_ARM: "arm",
			elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x", elf.EM_RISCV: "riscv64"}[ef.Machine]
		if arch == "" {
			return "", "", fmt.Errorf("ELF for machine %v", ef.Machine)
		}
		goos := "linux"
		if ef.OSABI == elf.ELFOSABI_FREEBSD {
			goos = "freebsd"
		}
		return goos, arch, nil
	}
	if mf, err := macho.NewFile(r); err == nil {
		arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[mf.Cpu]
		if arch == "" {
			return "", "", fmt.Errorf("Mach-O for CPU %v", mf.Cpu)
		}
		return "darwin", arch, nil
	}
	if pf, err := pe.NewFile(r); err == nil {
		arch := map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64", pe.IMAGE_FILE_MACHINE_I386: "386"}[pf.Machine]
		if arch == "" {
			return "", "", fmt.Errorf("PE for machine %#x", pf.Machine)
		}
		return "windows", arch, nil
	}
	return "", "", errors.New("not ELF, Mach-O or PE")
}
