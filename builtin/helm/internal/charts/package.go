package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// epoch is the modification time of every file in a packaged chart.
var epoch = time.Unix(0, 0).UTC()

// Package returns the chart packaged exactly as helm package makes it
// (chartutil.Save: same layout, Chart.yaml, gzip header), except that
// chartutil.Save stamps every tar entry with time.Now(); the entries are
// rewritten with a fixed time so that two renders of the same chart are
// byte-identical, as the render output must be.
func Package(ch *chart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kube-aws-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return normalise(raw)
}

// normalise rewrites a .tgz with every entry's times, owner and format fixed,
// keeping the entries' order, names, modes and contents and the gzip header.
func normalise(tgz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	zw.Header = gzip.Header{Comment: zr.Header.Comment, Extra: zr.Header.Extra, Name: zr.Header.Name, OS: zr.Header.OS}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		nh := &tar.Header{
			Typeflag: h.Typeflag,
			Name:     h.Name,
			Linkname: h.Linkname,
			Mode:     h.Mode,
			Size:     int64(len(body)),
			ModTime:  epoch,
			Format:   tar.FormatPAX,
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("unexpected entry %s of type %c in a packaged chart", h.Name, h.Typeflag)
		}
		if err := tw.WriteHeader(nh); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
