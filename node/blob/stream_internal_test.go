package blob

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/retry"
)

// failingBody returns its content, then fails instead of ending.
type failingBody struct{ r io.Reader }

func (f failingBody) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset by peer")
	}
	return n, err
}

// A Stream gives a consumer every byte of a right download, and of a wrong
// or broken one never the last hold bytes: whatever the sizes of the
// download, of the consumer's reads and of the body's.
func TestStreamHoldsTheEndUntilVerified(t *testing.T) {
	const hold = 64 << 10
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, hold - 1, hold, hold + 1, streamChunk, 3*streamChunk + 17, 1 << 20} {
		content := make([]byte, size)
		for i := range content {
			content[i] = byte(rnd.UintN(256))
		}
		right := nodeplan.SHA256Hex(content)
		wrong := nodeplan.SHA256Hex(append([]byte("x"), content...))
		for _, readSize := range []int{1000, 32 << 10, 1 << 20} {
			for _, tt := range []struct {
				name string
				body io.Reader
				sum  string
				want string // "" for the whole content
			}{
				{name: "right", body: bytes.NewReader(content), sum: right},
				{name: "right, trickled", body: io.MultiReader(bytes.NewReader(content[:size/3]), bytes.NewReader(content[size/3:])), sum: right},
				{name: "wrong", body: bytes.NewReader(content), sum: wrong, want: "has sha256 " + right},
				{name: "broken", body: failingBody{bytes.NewReader(content)}, sum: right, want: "connection reset by peer"},
			} {
				s := newStream(io.NopCloser(tt.body), "s3://bucket/key", tt.sum, hold)
				var got bytes.Buffer
				buf := make([]byte, readSize)
				var err error
				for {
					var n int
					n, err = s.Read(buf)
					got.Write(buf[:n])
					if err != nil {
						break
					}
				}
				if tt.want == "" {
					if err != io.EOF || !bytes.Equal(got.Bytes(), content) || s.Size() != int64(size) {
						t.Errorf("%d bytes in reads of %d, %s: %d bytes read, then %v", size, readSize, tt.name, got.Len(), err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "s3://bucket/key") {
					t.Errorf("%d bytes in reads of %d, %s: err = %v, want %q", size, readSize, tt.name, err, tt.want)
				}
				if retry.IsPermanent(err) != (tt.name == "wrong") {
					t.Errorf("%s: permanent = %v", tt.name, retry.IsPermanent(err))
				}
				if got.Len() > max(0, size-hold) || !bytes.Equal(got.Bytes(), content[:got.Len()]) {
					t.Errorf("%d bytes in reads of %d, %s: the consumer got %d bytes, at most %d may go before the end is verified", size, readSize, tt.name, got.Len(), max(0, size-hold))
				}
			}
		}
	}
}

// Finish verifies what a consumer did not read.
func TestStreamFinish(t *testing.T) {
	content := bytes.Repeat([]byte("layer "), 100_000)
	for _, tt := range []struct {
		name string
		sum  string
		read int
		ok   bool
	}{
		{"right, half read", nodeplan.SHA256Hex(content), len(content) / 2, true},
		{"right, nothing read", nodeplan.SHA256Hex(content), 0, true},
		{"wrong, half read", nodeplan.SHA256Hex(content[1:]), len(content) / 2, false},
	} {
		s := newStream(io.NopCloser(bytes.NewReader(content)), "https://example.com/a", tt.sum, 1024)
		if _, err := io.ReadFull(s, make([]byte, tt.read)); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		err := s.Finish()
		if (err == nil) != tt.ok || s.Size() != int64(len(content)) {
			t.Errorf("%s: Finish = %v after %d bytes", tt.name, err, s.Size())
		}
	}
}
