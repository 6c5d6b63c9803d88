package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// epoch is the modification time of every file in a packaged chart.
var epoch = time.Unix(0, 0).UTC()

// helmGzipExtra and helmGzipComment are the gzip header chartutil.Save
// writes on every package (its unexported headerBytes, and "Helm"): a
// package is recognised by them.
var helmGzipExtra = []byte("+aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=")

const helmGzipComment = "Helm"

// gzipWriters keeps compressors between charts: a compressor costs about a
// megabyte of tables to set up, many times the few kilobytes of a chart.
// A reset compressor writes the same bytes as a new one.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// Package returns the chart packaged exactly as helm package makes it
// (chartutil.Save: same entries in the same order, Chart.yaml, gzip
// header), except that every tar entry has a fixed time (chartutil.Save
// stamps each with time.Now()) and the PAX format, so that two renders of
// the same chart are byte-identical, as the render output must be.
//
// The archive is written in memory in one pass. chartutil.Save only writes
// to a file, so using it meant a temporary file and compressing every chart
// twice (once by Save, once after the times were fixed): most of the helm
// plugin's CPU in a render. TestPackageMatchesHelm keeps this the same as
// chartutil.Save with the times fixed, for every chart kube-aws ships.
func Package(ch *chart.Chart) ([]byte, error) {
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("chart validation: %w", err)
	}
	var out bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&out)
	zw.Header = gzip.Header{Comment: helmGzipComment, Extra: helmGzipExtra, OS: 255}
	tw := tar.NewWriter(zw)
	if err := writeChart(tw, ch, ""); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeChart writes a chart's files as chartutil's writeTarContents does:
// Chart.yaml, Chart.lock (apiVersion v2), values.yaml, values.schema.json,
// the templates, the other files, then each dependency under charts/.
func writeChart(tw *tar.Writer, c *chart.Chart, prefix string) error {
	if filepath.Base(c.Name()) != c.Name() {
		return chartutil.ErrInvalidChartName{Name: c.Name()}
	}
	base := filepath.Join(prefix, c.Name())

	// A v1 chart's dependencies live in requirements.yaml, not Chart.yaml.
	meta := c.Metadata
	if meta.APIVersion == chart.APIVersionV1 {
		m := *meta
		m.Dependencies = nil
		meta = &m
	}
	cdata, err := yaml.Marshal(meta)
	if err != nil {
		return err
	}
	if err := writeFile(tw, filepath.Join(base, chartutil.ChartfileName), cdata); err != nil {
		return err
	}
	if c.Metadata.APIVersion == chart.APIVersionV2 && c.Lock != nil {
		ldata, err := yaml.Marshal(c.Lock)
		if err != nil {
			return err
		}
		if err := writeFile(tw, filepath.Join(base, "Chart.lock"), ldata); err != nil {
			return err
		}
	}
	for _, f := range c.Raw {
		if f.Name == chartutil.ValuesfileName {
			if err := writeFile(tw, filepath.Join(base, chartutil.ValuesfileName), f.Data); err != nil {
				return err
			}
		}
	}
	if c.Schema != nil {
		if !json.Valid(c.Schema) {
			return errors.New("Invalid JSON in " + chartutil.SchemafileName)
		}
		if err := writeFile(tw, filepath.Join(base, chartutil.SchemafileName), c.Schema); err != nil {
			return err
		}
	}
	for _, f := range c.Templates {
		if err := writeFile(tw, filepath.Join(base, f.Name), f.Data); err != nil {
			return err
		}
	}
	for _, f := range c.Files {
		if err := writeFile(tw, filepath.Join(base, f.Name), f.Data); err != nil {
			return err
		}
	}
	for _, dep := range c.Dependencies() {
		if err := writeChart(tw, dep, filepath.Join(base, chartutil.ChartsDir)); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes one regular file, mode 0644 as chartutil writes them.
func writeFile(tw *tar.Writer, name string, body []byte) error {
	h := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     filepath.ToSlash(name),
		Mode:     0o644,
		Size:     int64(len(body)),
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(body)
	return err
}
