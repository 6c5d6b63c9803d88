package blob

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/retry"
)

// streamChunk is how much a Stream reads from the download at a time.
const streamChunk = 256 << 10

// Stream is a download read as it arrives, for a consumer that must not
// act on it before it is verified but need not wait for all of it to
// start: an image archive piped into containerd's importer, which names
// its images only once it has read the archive's end. The stream keeps
// the last bytes of the download back until every byte has arrived and the
// sha256 matched, so a consumer that acts only at the end of its input
// never sees the end of a wrong download. The download is never written
// to disk by the stream.
type Stream struct {
	body  io.ReadCloser
	where string
	want  string
	hash  hash.Hash
	hold  int

	back []byte // arrived bytes back[r:w] not yet read, the held ones last
	r, w int
	// verified: the download ended and matched, the held bytes may go.
	verified bool
	err      error // the download's failure, or the mismatch; sticky
	arrived  int64
}

// Stream starts the download of src and returns it as a Stream that holds
// back its last hold bytes until the whole download is verified.
func (st *Store) Stream(ctx context.Context, src Source, hold int) (*Stream, error) {
	if !nodeplan.IsSHA256(src.SHA256) {
		return nil, retry.Permanent(fmt.Errorf("%s: %q is not a sha256", src, src.SHA256))
	}
	body, err := st.open(ctx, src)
	if err != nil {
		return nil, err
	}
	return newStream(body, st.where(src), src.SHA256, hold), nil
}

func newStream(body io.ReadCloser, where, want string, hold int) *Stream {
	return &Stream{body: body, where: where, want: want, hash: sha256.New(), hold: hold, back: make([]byte, hold+streamChunk)}
}

// Read returns the download's bytes but the held ones; those come once
// the download has ended and matched its sha256. A wrong download ends
// with the mismatch (retry.Permanent) instead of its held bytes, a failed
// one with the failure.
func (s *Stream) Read(p []byte) (int, error) {
	for {
		keep := s.hold
		if s.verified {
			keep = 0
		}
		if ready := s.w - s.r - keep; ready > 0 {
			n := copy(p, s.back[s.r:s.r+ready])
			s.r += n
			return n, nil
		}
		if s.verified {
			return 0, io.EOF
		}
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
}

// fill reads the next piece of the download after what is held.
func (s *Stream) fill() {
	if len(s.back)-s.w < streamChunk/2 {
		// At most hold bytes are left unread here (none are ready), so
		// moving them to the front leaves room for a whole chunk.
		s.w = copy(s.back, s.back[s.r:s.w])
		s.r = 0
	}
	n, err := s.body.Read(s.back[s.w:])
	s.hash.Write(s.back[s.w : s.w+n])
	s.w += n
	s.arrived += int64(n)
	switch {
	case err == io.EOF:
		s.err = checkSum(s.hash, s.where, s.want)
		s.verified = s.err == nil
	case err != nil:
		s.err = fmt.Errorf("downloading %s: %w", s.where, err)
	}
}

// Err is the download's failure or mismatch, once the stream has met it.
func (s *Stream) Err() error { return s.err }

// Finish reads what is left of the download without returning it and
// reports whether it was what the sha256 says: for a consumer that stopped
// reading before the end (a tar archive's end-of-archive marker may come
// before padding).
func (s *Stream) Finish() error {
	for !s.verified && s.err == nil {
		s.r = s.w
		s.fill()
	}
	return s.err
}

// Size is how many bytes have arrived.
func (s *Stream) Size() int64 { return s.arrived }

// Close ends the download.
func (s *Stream) Close() error { return s.body.Close() }
