package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// BenchmarkLayerDecompression decompresses one layer holding a large Go
// binary (this test's own executable) as a machine does when containerd
// unpacks it: zstd as the builder writes layers, against gzip as it wrote
// them before (the same tar, compressed at gzip's default level). containerd
// uses these same decoders: the standard library's gzip, klauspost's zstd.
// The layer sizes are reported as compressed-MB. zstd's decoder may use a
// second goroutine: -cpu 1 gives the figure for one CPU.
func BenchmarkLayerDecompression(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	zst := filepath.Join(dir, "layer.tar.zst")
	if err := writeLayer(zst, []entry{{path: "/usr/local/bin/tool", typ: tar.TypeReg, mode: 0o755, src: exe}}); err != nil {
		b.Fatal(err)
	}
	zstLayer, err := os.ReadFile(zst)
	if err != nil {
		b.Fatal(err)
	}
	plain := decode(b, "zstd", zstLayer)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	zw.Write(plain)
	zw.Close()

	for _, c := range []struct {
		name  string
		layer []byte
	}{{"gzip", gz.Bytes()}, {"zstd", zstLayer}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				decode(b, c.name, c.layer)
			}
			b.ReportMetric(float64(len(c.layer))/1e6, "compressed-MB")
		})
	}
}

func decode(b *testing.B, format string, layer []byte) []byte {
	var r io.Reader
	switch format {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(layer))
		if err != nil {
			b.Fatal(err)
		}
		r = zr
	default:
		zr, err := zstd.NewReader(bytes.NewReader(layer))
		if err != nil {
			b.Fatal(err)
		}
		defer zr.Close()
		r = zr
	}
	out, err := io.ReadAll(r)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
