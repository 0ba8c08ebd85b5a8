package recordbatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is the compression type in attributes bits 0-2.
type Codec int8

const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

// String is the name kafka-dump-log prints (CompressionType.name).
func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

// CodecForName maps a topic compression.type to a codec; ok is false for "producer".
func CodecForName(name string) (c Codec, ok bool) {
	switch name {
	case "uncompressed", "none":
		return None, true
	case "gzip":
		return Gzip, true
	case "snappy":
		return Snappy, true
	case "lz4":
		return LZ4, true
	case "zstd":
		return Zstd, true
	}
	return None, false
}

// MaxDecompressed bounds one batch's decompressed records, so a tiny malicious blob cannot
// exhaust memory.
var MaxDecompressed = 256 << 20

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var (
	zstdDecOnce sync.Once
	zstdDec     *zstd.Decoder
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
	gzipReaders sync.Pool
)

func zstdDecoder() *zstd.Decoder {
	zstdDecOnce.Do(func() {
		zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(MaxDecompressed)))
	})
	return zstdDec
}

func zstdEncoder() *zstd.Encoder {
	zstdEncOnce.Do(func() {
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	})
	return zstdEnc
}

func readAllLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(MaxDecompressed)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxDecompressed {
		return nil, ErrTooLarge
	}
	return out, nil
}

// Decompress returns the plain records section of a compressed one.
func Decompress(c Codec, data []byte) ([]byte, error) {
	out, err := decompress(c, data)
	if err != nil {
		if err == ErrTooLarge || err == ErrBadCodec {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	return out, nil
}

func decompress(c Codec, data []byte) ([]byte, error) {
	switch c {
	case None:
		return data, nil
	case Gzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(data))
		} else {
			err = zr.Reset(bytes.NewReader(data))
		}
		if err != nil {
			return nil, err
		}
		defer gzipReaders.Put(zr)
		return readAllLimited(zr)
	case Snappy:
		if bytes.HasPrefix(data, xerialMagic) {
			return xerialDecode(data)
		}
		return snappyBlock(data)
	case LZ4:
		return readAllLimited(lz4.NewReader(bytes.NewReader(data)))
	case Zstd:
		return zstdDecoder().DecodeAll(data, nil)
	}
	return nil, ErrBadCodec
}

func snappyBlock(data []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(data)
	if err != nil {
		return nil, err
	}
	if n > MaxDecompressed {
		return nil, ErrTooLarge
	}
	return snappy.Decode(nil, data)
}

// xerialDecode reads snappy-java's stream framing: 8-byte magic, int32 version, int32
// compatible version, then chunks of int32 length + snappy block.
func xerialDecode(data []byte) ([]byte, error) {
	if len(data) < 16 {
		return nil, fmt.Errorf("short xerial header")
	}
	data = data[16:]
	var out []byte
	for len(data) > 0 {
		if len(data) < 4 {
			return nil, fmt.Errorf("short xerial chunk length")
		}
		n := int(int32(binary.BigEndian.Uint32(data)))
		data = data[4:]
		if n < 0 || n > len(data) {
			return nil, fmt.Errorf("xerial chunk length %d beyond data", n)
		}
		dl, err := snappy.DecodedLen(data[:n])
		if err != nil {
			return nil, err
		}
		if len(out)+dl > MaxDecompressed {
			return nil, ErrTooLarge
		}
		chunk, err := snappy.Decode(nil, data[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, chunk...)
		data = data[n:]
	}
	return out, nil
}

// xerialBlock is snappy-java's default block size.
const xerialBlock = 32 << 10

// Compress encodes plain records with c, as Kafka's Java producer does (xerial framing for
// snappy, LZ4 frames, standard gzip and zstd).
func Compress(c Codec, data []byte) ([]byte, error) {
	switch c {
	case None:
		return data, nil
	case Gzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Snappy:
		out := append([]byte(nil), xerialMagic...)
		out = binary.BigEndian.AppendUint32(out, 1)
		out = binary.BigEndian.AppendUint32(out, 1)
		for len(data) > 0 {
			n := min(len(data), xerialBlock)
			enc := snappy.Encode(nil, data[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(enc)))
			out = append(out, enc...)
			data = data[n:]
		}
		return out, nil
	case LZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Zstd:
		return zstdEncoder().EncodeAll(data, nil), nil
	}
	return nil, ErrBadCodec
}
