package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pierrec/lz4/v4"
)

const fuzzMax = 1 << 20

// goldenFiles returns the bytes of every testdata/*.bin vector.
func goldenFiles(f *testing.F) map[string][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no golden vectors: %v", err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// FuzzValidate feeds arbitrary bytes to Validate and Records. Invariants:
// neither panics nor allocates past the bound; a batch valid from a client
// is valid from the log too; when Validate accepts a batch, Records decodes
// exactly Summary.Records records; and those records, rebuilt with Build,
// decode to the same records (semantic round trip; the bytes may differ,
// as non-minimal varints are accepted).
func FuzzValidate(f *testing.F) {
	for _, b := range goldenFiles(f) {
		if len(b) < 4<<10 {
			f.Add(b)
		}
	}
	f.Add(rawBatch(0, 0, 1, 2, -1, -1, recs(0, 1)))
	f.Add(rawBatch(0, 0, 5, 0, 7, 3, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		opts := ValidateOptions{MaxDecompressed: fuzzMax}
		client, cerr := Validate(b, opts)
		opts.Origin = OriginInternal
		internal, ierr := Validate(b, opts)
		if cerr == nil && ierr != nil {
			t.Fatalf("valid from a client but not internally: %v", ierr)
		}
		if cerr == nil && client != internal {
			t.Fatalf("summaries differ: %+v vs %+v", client, internal)
		}
		for _, err := range []error{cerr, ierr} {
			if err != nil && !knownError(err) {
				t.Fatalf("unclassified error: %v", err)
			}
		}
		rs, rerr := Records(b, fuzzMax)
		if ierr == nil && (rerr != nil || len(rs) != internal.Records) {
			t.Fatalf("Validate: %d records; Records: %d, %v", internal.Records, len(rs), rerr)
		}
		if ierr != nil && rerr == nil {
			t.Fatalf("Records accepted what Validate refused: %v", ierr)
		}
		if rerr != nil {
			return
		}
		h := Header(b)
		rebuilt, err := Build(h.Spec(), rs)
		if err != nil {
			t.Fatalf("Build of decoded records: %v", err)
		}
		back, err := Records(rebuilt, 2*fuzzMax)
		if err != nil {
			t.Fatalf("Records of rebuilt batch: %v", err)
		}
		if !reflect.DeepEqual(back, rs) && !(len(back) == 0 && len(rs) == 0) {
			t.Fatalf("round trip changed the records")
		}
		// The header survives the rebuild (Build recomputes only lengths,
		// count and CRC; lastOffsetDelta comes from the last record, and a
		// zero maxTimestamp is computed).
		got, want := Header(rebuilt).Spec(), h.Spec()
		if want.MaxTimestamp == 0 {
			got.MaxTimestamp = 0
		}
		if got != want {
			t.Fatalf("header changed:\n got %+v\nwant %+v", got, want)
		}
	})
}

func knownError(err error) bool {
	return IsCorruption(err) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidBatch)
}

// fuzzDecompress is the body of the per-codec targets. Invariants: no
// panic; output never over the bound; only ErrTooLarge or
// ErrCorruptCompressed; a success decodes again identically with the
// bound set to its size, and one byte less is ErrTooLarge.
func fuzzDecompress(f *testing.F, c Codec) {
	for _, b := range goldenFiles(f) {
		if Header(b).Codec() == c && len(b) < 16<<10 {
			f.Add(b[HeaderSize:])
		}
	}
	for _, in := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte("abc"), 300), make([]byte, 70<<10)} {
		out, err := Compress(c, nil, in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(out)
	}
	if c == Snappy {
		f.Add(xerial())
		f.Add(xerial([]byte("a"), bytes.Repeat([]byte("b"), 100)))
	}
	if c == Zstd {
		f.Add(zstdRLEBomb(3))
	}
	const max = 256 << 10
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Decompress(c, src, max)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorruptCompressed) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if len(out) > max {
			t.Fatalf("%d bytes over the bound %d", len(out), max)
		}
		again, err := Decompress(c, src, len(out))
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("bound = size: %v", err)
		}
		if len(out) > 0 {
			if _, err := Decompress(c, src, len(out)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("bound = size-1: %v", err)
			}
		}
	})
}

func FuzzDecompressGzip(f *testing.F)   { fuzzDecompress(f, Gzip) }
func FuzzDecompressSnappy(f *testing.F) { fuzzDecompress(f, Snappy) }
func FuzzDecompressLZ4(f *testing.F)    { fuzzDecompress(f, LZ4) }
func FuzzDecompressZstd(f *testing.F)   { fuzzDecompress(f, Zstd) }

// FuzzLZ4Frame checks our lz4 frame reader against pierrec's. Invariants:
// no panic; output within the bound; the whole decode and the stream
// agree; and where pierrec's Reader accepts a frame within the bound we
// yield the same bytes, except where we deliberately read as Kafka does
// (lz4frame.go): other magics (skippable, legacy), dependent blocks, and
// bytes after the end mark (more frames, or a stored-bit end mark).
func FuzzLZ4Frame(f *testing.F) {
	for _, b := range goldenFiles(f) {
		if Header(b).Codec() == LZ4 && len(b) < 16<<10 {
			f.Add(b[HeaderSize:])
		}
	}
	in := append(pseudoRandom(300), bytes.Repeat([]byte("kafka "), 200)...)
	for _, opts := range [][]lz4.Option{
		nil,
		{lz4.BlockChecksumOption(true)},
		{lz4.ChecksumOption(false), lz4.SizeOption(uint64(len(in)))},
		{lz4.BlockSizeOption(lz4.Block256Kb), lz4.CompressionLevelOption(lz4.Level9)},
	} {
		f.Add(pierrecFrame(f, in, opts...))
	}
	f.Add(pierrecFrame(f, nil))
	f.Add(binary.LittleEndian.AppendUint32(nil, 0x184D2A50))
	const max = 256 << 10
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := lz4Decodes(t, src, max)
		if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorruptCompressed) {
			t.Fatalf("unclassified error: %v", err)
		}
		if len(out) > max {
			t.Fatalf("%d bytes over the bound %d", len(out), max)
		}
		ref, rerr := pierrecDecode(src, max)
		if rerr != nil || !lz4Comparable(src) {
			return
		}
		if err != nil || !bytes.Equal(out, ref) {
			t.Fatalf("pierrec reads %d bytes; we: %v, %d bytes", len(ref), err, len(out))
		}
	})
}

// lz4Comparable reports whether src is a single frame of the kind where
// our reader and pierrec's must agree: our magic, independent blocks,
// nothing after the end mark.
func lz4Comparable(src []byte) bool {
	if len(src) < 6 || binary.LittleEndian.Uint32(src) != lz4Magic || src[4]&lz4FlagIndepend == 0 {
		return false
	}
	f, err := parseLZ4Frame(src)
	if err != nil {
		return true // pierrec must refuse it too
	}
	for pos := f.first; ; {
		data, _, next, err := f.block(src, pos, false)
		if err != nil {
			return true
		}
		if data == nil {
			return next == len(src)
		}
		pos = next
	}
}
