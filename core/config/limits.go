package config

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Size limits of the files kube-aws reads as configuration.
//
// MaxConfigFileSize bounds cluster.yaml and each plugin config file. Parsing
// YAML into positioned nodes (what gives every diagnostic its line) briefly
// takes up to about 300 bytes of memory per byte of input (a long flow list
// of one-character items), so the limit is what keeps kube-aws well under
// 100 MB for any input: about 50 MB at the limit, measured (256 KiB took
// 84 MB, too close). A larger file is refused from its size alone, before it
// is read. A hand-written cluster.yaml is a few KiB (cluster.yaml.example is
// 10 KiB); plugin values can be split over several config files.
// docs/configuration.md states the limit; TestRefusedInputStaysUnder100MB
// (cmd/kube-aws) measures the memory.
//
// maxSecretFileSize bounds a valueFrom.file secret, read but not parsed.
const (
	MaxConfigFileSize = 128 << 10
	maxSecretFileSize = 1 << 20
)

// TooLargeError is a file over its size limit. Size is -1 when the file is
// not a regular file (a pipe, a device) and was read up to the limit.
type TooLargeError struct {
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("it is larger than the %s limit (read up to the limit)", byteSize(e.Limit))
	}
	return fmt.Sprintf("it is %s, over the %s limit", byteSize(e.Size), byteSize(e.Limit))
}

// readLimited reads a whole file of at most limit bytes. A regular file
// over the limit is refused from its size, without reading it; anything
// else (a named pipe, /dev/stdin, /dev/zero by mistake) is read up to the
// limit and refused past it, so it cannot hang kube-aws or fill its memory.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, &TooLargeError{Size: fi.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		n := int64(-1)
		if fi.Mode().IsRegular() {
			n = int64(len(data)) // it grew while being read
		}
		return nil, &TooLargeError{Size: n, Limit: limit}
	}
	return data, nil
}

// byteSize formats a size as people read it: 256 KiB, 50.0 MiB, 812 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// isTooLarge reports whether err is a TooLargeError.
func isTooLarge(err error) bool {
	var tl *TooLargeError
	return errors.As(err, &tl)
}
