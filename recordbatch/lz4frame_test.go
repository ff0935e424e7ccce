package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/pierrec/lz4/v4"
)

func TestXXH32Vectors(t *testing.T) {
	for _, v := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02CC5D05},
		{"a", 0x550D7456},
		{"abc", 0x32D153FF},
		{"Nobody inspects the spammish repetition", 0xE2293B2F},
	} {
		if got := xxh32([]byte(v.in)); got != v.want {
			t.Errorf("xxh32(%q) = %#08x, want %#08x", v.in, got, v.want)
		}
	}
}

// TestXXH32AgainstPierrec checks ours against the block and content
// checksums pierrec's writer puts in frames, for lengths on both sides of
// the 16-byte stripe and of odd lengths.
func TestXXH32AgainstPierrec(t *testing.T) {
	in := pseudoRandom(3 << 10)
	for _, n := range []int{1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 100, 1001, 3 << 10} {
		frame := pierrecFrame(t, in[:n], lz4.BlockChecksumOption(true), lz4.ChecksumOption(true))
		f, err := parseLZ4Frame(frame)
		if err != nil {
			t.Fatal(err)
		}
		data, _, next, err := f.block(frame, f.first, false)
		if err != nil || data == nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if got, want := xxh32(data), binary.LittleEndian.Uint32(frame[next-4:]); got != want {
			t.Errorf("block of %d bytes: %#08x, pierrec %#08x", len(data), got, want)
		}
		if got, want := xxh32(in[:n]), binary.LittleEndian.Uint32(frame[len(frame)-4:]); got != want {
			t.Errorf("content of %d bytes: %#08x, pierrec %#08x", n, got, want)
		}
	}
}

func pierrecFrame(t testing.TB, in []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pierrecDecode is the reference: pierrec's Reader read within limit.
func pierrecDecode(src []byte, limit int) ([]byte, error) {
	return readBounded(nil, lz4.NewReader(bytes.NewReader(src)), 0, limit)
}

// lz4Decodes returns what both our paths make of src: the whole decode
// and the stream (which must agree; the stream has no bound of its own).
func lz4Decodes(t *testing.T, src []byte, limit int) ([]byte, error) {
	t.Helper()
	whole, werr := decompress(LZ4, nil, src, limit)
	var sw sliceWriter
	var serr error
	if s, err := openLZ4Stream(src); err != nil {
		serr = err
	} else {
		_, serr = s.WriteTo(&sw)
		s.release()
	}
	switch {
	case serr != nil:
		if !errors.Is(serr, ErrCorruptCompressed) || werr == nil {
			t.Fatalf("stream: %v; whole decode: %v", serr, werr)
		}
	case werr != nil:
		// Only the whole decode has a bound.
		if !errors.Is(werr, ErrTooLarge) {
			t.Fatalf("whole decode: %v; stream accepts", werr)
		}
	case !bytes.Equal(whole, sw.b):
		t.Fatalf("whole decode and stream differ: %d vs %d bytes", len(whole), len(sw.b))
	}
	return whole, werr
}

// tBlock is a block of a hand-built frame.
type tBlock struct {
	data    []byte // uncompressed content
	raw     bool   // stored uncompressed
	badSum  bool   // wrong block checksum
	size    int    // block size field to write instead, if non-zero
	payload []byte // block data to write instead of compressing data
}

// tFrame describes a hand-built frame.
type tFrame struct {
	flg, bd     byte
	contentSize uint64
	blocks      []tBlock
	badHC       bool
	endMark     []byte // instead of four zeros
	contentSum  []byte // instead of the right checksum
	trailer     []byte
}

const flgIndep = lz4Version1 | lz4FlagIndepend

func (tf tFrame) bytes(t *testing.T) []byte {
	t.Helper()
	b := binary.LittleEndian.AppendUint32(nil, lz4Magic)
	b = append(b, tf.flg, tf.bd)
	if tf.flg&lz4FlagSize != 0 {
		b = binary.LittleEndian.AppendUint64(b, tf.contentSize)
	}
	hc := byte(xxh32(b[4:]) >> 8)
	if tf.badHC {
		hc++
	}
	b = append(b, hc)
	var content []byte
	for _, blk := range tf.blocks {
		content = append(content, blk.data...)
		data := blk.payload
		if data == nil && blk.raw {
			data = blk.data
		}
		if data == nil {
			c := make([]byte, lz4.CompressBlockBound(len(blk.data)))
			n, err := lz4.CompressBlock(blk.data, c, nil)
			if err != nil || n == 0 {
				t.Fatalf("CompressBlock: %d, %v", n, err)
			}
			data = c[:n]
		}
		size := uint32(len(data))
		if blk.size != 0 {
			size = uint32(blk.size)
		}
		if blk.raw {
			size |= lz4RawBlock
		}
		b = binary.LittleEndian.AppendUint32(b, size)
		b = append(b, data...)
		if tf.flg&lz4FlagBlockSum != 0 {
			sum := xxh32(data)
			if blk.badSum {
				sum++
			}
			b = binary.LittleEndian.AppendUint32(b, sum)
		}
	}
	if tf.endMark != nil {
		b = append(b, tf.endMark...)
	} else {
		b = append(b, 0, 0, 0, 0)
	}
	if tf.contentSum != nil {
		b = append(b, tf.contentSum...)
	} else if tf.flg&lz4FlagContentSum != 0 {
		b = binary.LittleEndian.AppendUint32(b, xxh32(content))
	}
	return append(b, tf.trailer...)
}

func (tf tFrame) content() []byte {
	var c []byte
	for _, blk := range tf.blocks {
		c = append(c, blk.data...)
	}
	return c
}

func TestLZ4FrameRefusals(t *testing.T) {
	text := bytes.Repeat([]byte("lz4 frame "), 1000)
	good := tFrame{flg: flgIndep, bd: 0x40, blocks: []tBlock{{data: text}}}
	goodBytes := good.bytes(t)
	with := func(edit func(*tFrame)) []byte {
		f := good
		f.blocks = append([]tBlock(nil), good.blocks...)
		edit(&f)
		return f.bytes(t)
	}
	big := make([]byte, 64<<10+1)
	cases := []struct {
		name  string
		in    []byte
		limit int
		want  error
	}{
		{"empty", nil, 1 << 20, ErrCorruptCompressed},
		{"short header", goodBytes[:5], 1 << 20, ErrCorruptCompressed},
		{"no HC", goodBytes[:6], 1 << 20, ErrCorruptCompressed},
		{"wrong magic", append([]byte{0x05}, goodBytes[1:]...), 1 << 20, ErrCorruptCompressed},
		{"skippable frame", append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0x184D2A50), 0), goodBytes...), 1 << 20, ErrCorruptCompressed},
		{"legacy frame", append(binary.LittleEndian.AppendUint32(nil, 0x184C2102), goodBytes[4:]...), 1 << 20, ErrCorruptCompressed},
		{"reserved FLG bit 0 (dictionary ID)", with(func(f *tFrame) { f.flg |= 1 }), 1 << 20, ErrCorruptCompressed},
		{"reserved FLG bit 1", with(func(f *tFrame) { f.flg |= 2 }), 1 << 20, ErrCorruptCompressed},
		{"dependent blocks", with(func(f *tFrame) { f.flg &^= lz4FlagIndepend }), 1 << 20, ErrCorruptCompressed},
		{"version 0", with(func(f *tFrame) { f.flg &^= lz4FlagVersion }), 1 << 20, ErrCorruptCompressed},
		{"version 2", with(func(f *tFrame) { f.flg = f.flg&^lz4FlagVersion | 0x80 }), 1 << 20, ErrCorruptCompressed},
		{"version 3", with(func(f *tFrame) { f.flg |= lz4FlagVersion }), 1 << 20, ErrCorruptCompressed},
		{"reserved BD low bits", with(func(f *tFrame) { f.bd |= 1 }), 1 << 20, ErrCorruptCompressed},
		{"reserved BD bit 7", with(func(f *tFrame) { f.bd |= 0x80 }), 1 << 20, ErrCorruptCompressed},
		{"BD block size 0", with(func(f *tFrame) { f.bd = 0 }), 1 << 20, ErrCorruptCompressed},
		{"BD block size 3", with(func(f *tFrame) { f.bd = 0x30 }), 1 << 20, ErrCorruptCompressed},
		{"bad header checksum", with(func(f *tFrame) { f.badHC = true }), 1 << 20, ErrCorruptCompressed},
		{"bad header checksum with size", with(func(f *tFrame) { f.flg |= lz4FlagSize; f.badHC = true }), 1 << 20, ErrCorruptCompressed},
		{"truncated content size", with(func(f *tFrame) { f.flg |= lz4FlagSize })[:12], 1 << 20, ErrCorruptCompressed},
		{"truncated block size", goodBytes[:9], 1 << 20, ErrCorruptCompressed},
		{"truncated block", goodBytes[:20], 1 << 20, ErrCorruptCompressed},
		{"no end mark", goodBytes[:len(goodBytes)-4], 1 << 20, ErrCorruptCompressed},
		{"truncated end mark", goodBytes[:len(goodBytes)-1], 1 << 20, ErrCorruptCompressed},
		{"compressed block over BD max", with(func(f *tFrame) {
			f.blocks = []tBlock{{data: []byte("x"), size: 64<<10 + 1, payload: big}}
		}), 1 << 20, ErrCorruptCompressed},
		{"stored block over BD max", with(func(f *tFrame) { f.blocks = []tBlock{{data: big, raw: true}} }), 1 << 20, ErrCorruptCompressed},
		{"block decoding past BD max", with(func(f *tFrame) { f.blocks = []tBlock{{data: make([]byte, 64<<10+1)}} }), 1 << 20, ErrCorruptCompressed},
		{"corrupt block data", with(func(f *tFrame) { f.blocks = []tBlock{{payload: []byte{0xf0, 0xff, 'a'}}} }), 1 << 20, ErrCorruptCompressed},
		{"bad block checksum", with(func(f *tFrame) { f.flg |= lz4FlagBlockSum; f.blocks[0].badSum = true }), 1 << 20, ErrCorruptCompressed},
		{"bad stored block checksum", with(func(f *tFrame) {
			f.flg |= lz4FlagBlockSum
			f.blocks = []tBlock{{data: text, raw: true, badSum: true}}
		}), 1 << 20, ErrCorruptCompressed},
		{"truncated content checksum", with(func(f *tFrame) { f.flg |= lz4FlagContentSum; f.contentSum = []byte{1, 2, 3} }), 1 << 20, ErrCorruptCompressed},
		{"compressed over the bound", goodBytes, len(text) - 1, ErrTooLarge},
		{"stored over the bound", with(func(f *tFrame) { f.blocks[0].raw = true }), len(text) - 1, ErrTooLarge},
		{"second block over the bound", with(func(f *tFrame) { f.blocks = append(f.blocks, tBlock{data: []byte("y")}) }), len(text), ErrTooLarge},
		// No room at all: pierrec's block decoder must not be handed an
		// empty dst (its assembly faulted on a nil one).
		{"bound zero", goodBytes, 0, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := lz4Decodes(t, c.in, c.limit)
			t.Log(err)
			if !errors.Is(err, c.want) {
				t.Fatalf("%d bytes out, %v; want %v", len(out), err, c.want)
			}
		})
	}
	// A truncated block checksum (the frame ends within it).
	f := good
	f.flg |= lz4FlagBlockSum
	b := f.bytes(t)
	if _, err := lz4Decodes(t, b[:len(b)-6], 1<<20); !errors.Is(err, ErrCorruptCompressed) {
		t.Fatalf("truncated block checksum: %v", err)
	}
}

// TestLZ4FrameAccepts covers every flag combination at each block size,
// with compressed and stored blocks, several to a frame, and Kafka's
// leniencies.
func TestLZ4FrameAccepts(t *testing.T) {
	for bd := byte(4); bd <= 7; bd++ {
		blockMax := 1 << (2*int(bd) + 8)
		full := bytes.Repeat([]byte("0123456789abcdef"), blockMax/16) // one full block
		blocks := []tBlock{{data: full}, {data: pseudoRandom(1000), raw: true}, {data: full[:777]}, {data: []byte("z")}}
		for flags := byte(0); flags < 8; flags++ {
			flg := byte(flgIndep)
			if flags&1 != 0 {
				flg |= lz4FlagBlockSum
			}
			if flags&2 != 0 {
				flg |= lz4FlagSize
			}
			if flags&4 != 0 {
				flg |= lz4FlagContentSum
			}
			tf := tFrame{flg: flg, bd: bd << 4, blocks: blocks}
			tf.contentSize = uint64(len(tf.content()))
			name := fmt.Sprintf("bd%d/flg%#02x", bd, flg)
			src := tf.bytes(t)
			want := tf.content()
			got, err := lz4Decodes(t, src, 16<<20)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v, %d bytes of %d", name, err, len(got), len(want))
			}
			if got, err := lz4Decodes(t, src, len(want)); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s, bound = size: %v", name, err)
			}
			if _, err := lz4Decodes(t, src, len(want)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s, bound = size-1: %v", name, err)
			}
			ref, err := pierrecDecode(src, 16<<20)
			if err != nil || !bytes.Equal(ref, want) {
				t.Fatalf("%s: pierrec: %v", name, err)
			}
		}
	}
	text := bytes.Repeat([]byte("kafka "), 100)
	base := tFrame{flg: flgIndep, bd: 0x40, blocks: []tBlock{{data: text}}}
	for _, c := range []struct {
		name string
		f    tFrame
		want []byte
	}{
		{"no blocks", tFrame{flg: flgIndep, bd: 0x70}, nil},
		{"no blocks, content checksum", tFrame{flg: flgIndep | lz4FlagContentSum, bd: 0x40}, nil},
		// Kafka skips the declared size and never checks the content checksum.
		{"wrong content size", func() tFrame { f := base; f.flg |= lz4FlagSize; f.contentSize = 3; return f }(), text},
		{"huge content size", func() tFrame { f := base; f.flg |= lz4FlagSize; f.contentSize = 1 << 62; return f }(), text},
		{"wrong content checksum", func() tFrame { f := base; f.flg |= lz4FlagContentSum; f.contentSum = []byte{1, 2, 3, 4}; return f }(), text},
		// Kafka stops at the end mark: what follows is never read.
		{"bytes after the end mark", func() tFrame { f := base; f.trailer = []byte("garbage"); return f }(), text},
		{"a second frame", func() tFrame { f := base; f.trailer = base.bytes(t); return f }(), text},
		// Kafka masks the stored bit before looking for the end mark.
		{"stored end mark", func() tFrame {
			f := base
			f.endMark = []byte{0, 0, 0, 0x80}
			f.trailer = []byte("ignored")
			return f
		}(), text},
	} {
		got, err := lz4Decodes(t, c.f.bytes(t), 1<<20)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: %v, %q", c.name, err, got)
		}
	}
}

// TestLZ4AgreesWithPierrec decodes frames pierrec's writer makes with
// various options and checks we read what its reader reads.
func TestLZ4AgreesWithPierrec(t *testing.T) {
	inputs := map[string][]byte{
		"empty":  {},
		"one":    {'k'},
		"text":   bytes.Repeat([]byte("kafka record batch "), 30000),
		"random": pseudoRandom(300 << 10),
		"zeros":  make([]byte, 5<<20),
		"mixed":  append(pseudoRandom(70<<10), bytes.Repeat([]byte("ab"), 100<<10)...),
	}
	type opt struct {
		name string
		opts []lz4.Option
	}
	var variants []opt
	for _, bs := range []lz4.BlockSize{lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb} {
		for _, sums := range []bool{false, true} {
			variants = append(variants, opt{fmt.Sprintf("%v/blocksum=%v", bs, sums),
				[]lz4.Option{lz4.BlockSizeOption(bs), lz4.BlockChecksumOption(sums), lz4.ChecksumOption(!sums)}})
		}
	}
	variants = append(variants,
		opt{"hc level 9", []lz4.Option{lz4.CompressionLevelOption(lz4.Level9)}},
		opt{"concurrent", []lz4.Option{lz4.ConcurrencyOption(2), lz4.BlockSizeOption(lz4.Block64Kb)}})
	for name, in := range inputs {
		for _, v := range variants {
			opts := v.opts
			if name != "empty" {
				opts = append(opts[:len(opts):len(opts)], lz4.SizeOption(uint64(len(in))))
			}
			src := pierrecFrame(t, in, opts...)
			ref, err := pierrecDecode(src, 8<<20)
			if err != nil {
				t.Fatalf("%s/%s: pierrec: %v", name, v.name, err)
			}
			got, err := lz4Decodes(t, src, 8<<20)
			if err != nil || !bytes.Equal(got, ref) || !bytes.Equal(got, in) {
				t.Fatalf("%s/%s: %v, %d bytes; pierrec %d", name, v.name, err, len(got), len(ref))
			}
		}
	}
}

// TestLZ4GoldenFrames decodes the lz4 batches the Java producer and kgo
// wrote, as pierrec's reader does. The Java producer's frames have 64 KiB
// blocks and no optional fields (FLG 0x60, BD 0x40); kgo's (pierrec's
// writer) have 4 MiB blocks and a content checksum (FLG 0x64, BD 0x70).
func TestLZ4GoldenFrames(t *testing.T) {
	for _, g := range []struct {
		name    string
		flg, bd byte
	}{
		{"java_lz4.bin", 0x60, 0x40}, {"java_lz4_large.bin", 0x60, 0x40},
		{"kgo_lz4.bin", 0x64, 0x70}, {"kgo_lz4_large.bin", 0x64, 0x70},
	} {
		name := g.name
		src := readGolden(t, name)[HeaderSize:]
		if src[4] != g.flg || src[5] != g.bd {
			t.Fatalf("%s: FLG %#02x BD %#02x, want %#02x %#02x", name, src[4], src[5], g.flg, g.bd)
		}
		ref, err := pierrecDecode(src, 1<<20)
		if err != nil {
			t.Fatalf("%s: pierrec: %v", name, err)
		}
		got, err := lz4Decodes(t, src, 1<<20)
		if err != nil || !bytes.Equal(got, ref) {
			t.Fatalf("%s: %v, %d bytes; pierrec %d", name, err, len(got), len(ref))
		}
	}
}

// TestLZ4DecodeAllocs: a whole decode into a buffer of room allocates
// nothing, and neither does the stream once its pools are warm.
func TestLZ4DecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	in := bytes.Repeat([]byte("kafka record batch "), 20000)
	src, err := Compress(LZ4, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, len(in))
	if n := testing.AllocsPerRun(20, func() {
		if dst, err = decompress(LZ4, dst, src, 1<<20); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("whole decode: %v allocs", n)
	}
	var sw sliceWriter
	sw.b = make([]byte, 0, 2*len(in))
	if n := testing.AllocsPerRun(20, func() {
		s, err := openLZ4Stream(src)
		if err != nil {
			t.Fatal(err)
		}
		sw.b = sw.b[:0]
		if _, err := s.WriteTo(&sw); err != nil {
			t.Fatal(err)
		}
		s.release()
	}); n != 0 {
		t.Errorf("stream: %v allocs", n)
	}
}

// TestLZ4WholeDecodeSizing: a frame of large blocks (kgo writes 4 MiB
// ones) is not given a block's worth of output up front; the output is
// right and at most about twice its size, with and without a declared
// content size, in one block or several.
func TestLZ4WholeDecodeSizing(t *testing.T) {
	text := bytes.Repeat([]byte("kafka record batch "), 16000)
	mixed := append(pseudoRandom(3<<20), bytes.Repeat(text, 20)...)
	for _, in := range [][]byte{text[:100<<10], text, pseudoRandom(200 << 10), mixed} {
		for _, sized := range []bool{false, true} {
			opts := []lz4.Option{lz4.BlockSizeOption(lz4.Block4Mb)}
			if len(in) < 1<<20 {
				opts[0] = lz4.BlockSizeOption(lz4.Block64Kb)
			}
			if sized {
				opts = append(opts, lz4.SizeOption(uint64(len(in))))
			}
			src := pierrecFrame(t, in, opts...)
			out, err := decompress(LZ4, nil, src, 64<<20)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%d bytes, sized %v: %v", len(in), sized, err)
			}
			if cap(out) > 2*len(out)+lz4GuessBlock {
				t.Errorf("%d bytes, sized %v: capacity %d", len(in), sized, cap(out))
			}
			if _, err := decompress(LZ4, nil, src, len(in)-1); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%d bytes, sized %v, bound = size-1: %v", len(in), sized, err)
			}
		}
	}

	// 200,000 one-byte blocks that decode to nothing: each block's bound
	// is 64 KiB, but the output is not sized from the bounds (it took 53
	// MiB for this 1 MB frame).
	frame := []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0}
	frame[6] = byte(xxh32(frame[4:6]) >> 8)
	for range 200000 {
		frame = append(frame, 1, 0, 0, 0, 0)
	}
	frame = append(frame, 0, 0, 0, 0)
	out, err := decompress(LZ4, nil, frame, 256<<20)
	if err != nil || len(out) != 0 {
		t.Fatalf("empty blocks: %d bytes, %v", len(out), err)
	}
	if guess := lz4GuessRatio * len(frame); cap(out) > guess {
		t.Errorf("empty blocks: capacity %d for a %d-byte frame, over %d", cap(out), len(frame), guess)
	}
}
