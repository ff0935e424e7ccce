package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
)

var allCodecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

func TestCompressRoundTrip(t *testing.T) {
	inputs := map[string][]byte{
		"empty":  {},
		"one":    {'x'},
		"text":   bytes.Repeat([]byte("kafka record batch "), 1000),
		"random": pseudoRandom(200 << 10),
	}
	for _, c := range allCodecs {
		for name, in := range inputs {
			prefix := []byte("prefix")
			out, err := Compress(c, append([]byte{}, prefix...), in)
			if err != nil {
				t.Fatalf("%v/%s: %v", c, name, err)
			}
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("%v/%s: Compress did not append to dst", c, name)
			}
			got, err := Decompress(c, out[len(prefix):], len(in))
			if err != nil {
				t.Fatalf("%v/%s: %v", c, name, err)
			}
			if !bytes.Equal(got, in) {
				t.Fatalf("%v/%s: round trip differs", c, name)
			}
			// One byte less than needed is too large.
			if len(in) > 0 {
				if _, err := Decompress(c, out[len(prefix):], len(in)-1); !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%v/%s: bound len-1: %v", c, name, err)
				}
			}
		}
	}
	if _, err := Compress(Codec(5), nil, nil); !errors.Is(err, ErrUnknownCodec) {
		t.Fatal(err)
	}
	if _, err := Decompress(Codec(7), nil, 10); !errors.Is(err, ErrUnknownCodec) {
		t.Fatal(err)
	}
}

func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// xerial frames raw snappy chunks the way xerial's SnappyOutputStream
// does: magic, version 1, compatible version 1, then per chunk an int32
// length and a raw snappy block.
func xerial(chunks ...[]byte) []byte {
	b := append([]byte{}, xerialMagic...)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	for _, c := range chunks {
		enc := snappy.Encode(nil, c)
		b = binary.BigEndian.AppendUint32(b, uint32(len(enc)))
		b = append(b, enc...)
	}
	return b
}

func TestXerial(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 2<<10) // 32 KiB
	cases := []struct {
		name string
		in   []byte
		want []byte
		err  error
	}{
		{"header only (zero length)", xerial(), []byte{}, nil},
		{"one chunk", xerial([]byte("hello")), []byte("hello"), nil},
		{"multi chunk", xerial(big, big, []byte("tail")), append(append(append([]byte{}, big...), big...), "tail"...), nil},
		{"truncated length", xerial([]byte("hello"))[:xerialHeaderSize+2], nil, ErrCorruptCompressed},
		{"truncated chunk", func() []byte { b := xerial([]byte("hello")); return b[:len(b)-1] }(), nil, ErrCorruptCompressed},
		{"zero length chunk", binary.BigEndian.AppendUint32(xerial(), 0), nil, ErrCorruptCompressed},
		{"negative chunk length", binary.BigEndian.AppendUint32(xerial(), 0xffffffff), nil, ErrCorruptCompressed},
		{"bad chunk", append(binary.BigEndian.AppendUint32(xerial(), 2), 0xff, 0xff), nil, ErrCorruptCompressed},
		{"over bound", xerial(big, big, big, big), nil, ErrTooLarge},
	}
	for _, c := range cases {
		got, err := Decompress(Snappy, c.in, 100<<10)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: %v, got %d bytes", c.name, err, len(got))
		}
	}
}

func TestDecompressCorrupt(t *testing.T) {
	for _, c := range []Codec{Gzip, Snappy, LZ4, Zstd} {
		good, err := Compress(c, nil, bytes.Repeat([]byte("abc"), 1000))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{nil, {0xff}, good[:len(good)/2], good[:len(good)-1]} {
			if _, err := Decompress(c, in, 1<<20); !errors.Is(err, ErrCorruptCompressed) {
				t.Errorf("%v %d bytes: %v", c, len(in), err)
			}
		}
	}
}

// zstdRLEBomb is a zstd frame without a content size of n RLE blocks of
// 128 KiB each: 4 bytes per 128 KiB of output.
func zstdRLEBomb(n int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58} // no FCS, 2 MiB window
	for i := 0; i < n; i++ {
		last := 0
		if i == n-1 {
			last = 1
		}
		hdr := uint32(last) | 1<<1 | (128<<10)<<3
		b = append(b, byte(hdr), byte(hdr>>8), byte(hdr>>16), 'z')
	}
	return b
}

// TestDecompressionBombs checks that tiny inputs that inflate far past the
// bound fail with ErrTooLarge having allocated about the bound, not the
// inflated size.
func TestDecompressionBombs(t *testing.T) {
	const limit = 1 << 20
	const inflated = 64 << 20
	zeros := make([]byte, inflated)
	mustCompress := func(c Codec) []byte {
		b, err := Compress(c, nil, zeros)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	streamedZstd := func() []byte {
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf) // a stream: no content size
		if err != nil {
			t.Fatal(err)
		}
		w.Write(zeros)
		w.Close()
		return buf.Bytes()
	}
	snappyDeclared := binary.AppendUvarint(nil, inflated) // a block header claiming 64 MiB
	// window is the codec's working memory the input may ask for: a zstd
	// stream's window (8 MiB for klauspost's default writer, 2 MiB in
	// zstdRLEBomb) and lz4's blocks.
	bombs := []struct {
		name   string
		c      Codec
		in     []byte
		window uint64
	}{
		{"gzip", Gzip, mustCompress(Gzip), 0},
		{"lz4", LZ4, mustCompress(LZ4), 0},
		{"zstd with size", Zstd, mustCompress(Zstd), 0},
		{"zstd stream", Zstd, streamedZstd(), 8 << 20},
		{"zstd rle blocks", Zstd, zstdRLEBomb(inflated / (128 << 10)), 2 << 20},
		{"snappy raw", Snappy, mustCompress(Snappy), 0},
		{"snappy declared", Snappy, append(snappyDeclared, 0), 0},
		{"xerial", Snappy, xerial(zeros[:8<<20], zeros[:8<<20]), 0},
	}
	zeros = nil
	for _, b := range bombs {
		if len(b.in) > inflated/16 {
			t.Fatalf("%s: %d bytes is no bomb", b.name, len(b.in))
		}
		Decompress(b.c, b.in, limit) // warm pools
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Decompress(b.c, b.in, limit)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s (%d bytes): %v, want ErrTooLarge", b.name, len(b.in), err)
		}
		// The output grows by doubling up to the bound (under 2x in all),
		// plus the codec's working memory.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*limit+2*b.window {
			t.Errorf("%s: allocated %d bytes for a bound of %d", b.name, alloc, limit)
		}
	}
}

// TestCodecsStartNoGoroutines: pooled codecs must not leave goroutines
// behind (zstd decoders can run background workers when streaming
// concurrently; ours decode synchronously).
func TestCodecsStartNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, c := range allCodecs {
		out, err := Compress(c, nil, bytes.Repeat([]byte("goroutine"), 5000))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(c, out, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"java_zstd.bin", "kgo_zstd.bin"} {
		if _, err := Validate(readGolden(t, f), ValidateOptions{MaxDecompressed: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before, %d after", before, after)
	}
}

// TestDeclaredSizesAreOnlyHints: a tiny payload whose header claims a huge
// output (gzip's ISIZE trailer, snappy's preamble; zstd's frame content
// size is trusted only up to zstdTrustedRatio) within a generous bound must not make Decompress allocate the
// claimed size before the payload proves itself.
func TestDeclaredSizesAreOnlyHints(t *testing.T) {
	const limit = 256 << 20
	const claim = 64 << 20
	small := bytes.Repeat([]byte("kcompatd"), 8)
	gz, err := Compress(Gzip, nil, small)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(gz[len(gz)-4:], claim) // forged ISIZE
	sn := append(binary.AppendUvarint(nil, claim), 0)    // snappy claiming 64 MiB
	zs, err := Compress(Zstd, nil, small)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    Codec
		in   []byte
	}{
		{"gzip isize", Gzip, gz},
		{"snappy preamble", Snappy, sn},
	} {
		Decompress(tc.c, tc.in, limit) // warm pools
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Decompress(tc.c, tc.in, limit)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: forged size accepted", tc.name)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: %d bytes of input allocated %d bytes", tc.name, len(tc.in), alloc)
		}
	}
	// Honest frames still decode.
	if out, err := Decompress(Zstd, zs, limit); err != nil || !bytes.Equal(out, small) {
		t.Fatalf("honest zstd frame: %v", err)
	}
}
