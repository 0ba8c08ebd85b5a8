package logstore

// Golden bytes: batches built independently by franz-go's kmsg.RecordBatch and by sarama's
// encoder are appended, read back and decoded again by both libraries; they must be
// identical apart from the fields the leader rewrites (baseOffset, partitionLeaderEpoch).
// sarama's encoder and decoder are unexported, so a tiny fake broker captures the bytes a
// sarama Broker sends in a Produce request and feeds our read bytes to its Fetch decoder.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// kmsgBatch builds a v2 batch with franz-go's kmsg types (as kgo's producer does).
func kmsgBatch(ts int64, n int, codec recordbatch.Codec) []byte {
	var raw []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("key-%d", i)),
			Value: []byte(fmt.Sprintf("value-%d", i)), Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}}}
		// Length is the size after the length varint.
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // a zero Length encodes as one byte
		raw = r.AppendTo(raw)
	}
	records := raw
	if codec != recordbatch.None {
		records, _ = recordbatch.Compress(codec, raw)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec),
		LastOffsetDelta: int32(n - 1), FirstTimestamp: ts, MaxTimestamp: ts + int64(n-1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: records,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	recordbatch.Batch(out).SetCRC()
	return out
}

// fakeBroker accepts one sarama connection and answers as scripted.
type fakeBroker struct {
	ln        net.Listener
	produced  chan []byte // record bytes of each Produce
	fetchData chan []byte // record bytes to answer the next Fetch with
}

func newFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBroker{ln: ln, produced: make(chan []byte, 8), fetchData: make(chan []byte, 8)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for {
			var sz [4]byte
			if _, err := io.ReadFull(c, sz[:]); err != nil {
				return
			}
			frame := make([]byte, binary.BigEndian.Uint32(sz[:]))
			if _, err := io.ReadFull(c, frame); err != nil {
				return
			}
			key := int16(binary.BigEndian.Uint16(frame))
			ver := int16(binary.BigEndian.Uint16(frame[2:]))
			corr := frame[4:8]
			cl := int(int16(binary.BigEndian.Uint16(frame[8:])))
			body := frame[10+max(cl, 0):]
			switch key {
			case 0:
				req := kmsg.ProduceRequest{Version: ver}
				if err := req.ReadFrom(body); err != nil {
					fb.produced <- nil
					continue
				}
				fb.produced <- req.Topics[0].Partitions[0].Records
			case 1:
				data := <-fb.fetchData
				resp := kmsg.NewFetchResponse()
				resp.Version = ver
				tp := kmsg.NewFetchResponseTopic()
				tp.Topic = "golden"
				p := kmsg.NewFetchResponseTopicPartition()
				p.HighWatermark, p.LastStableOffset = 1<<20, 1<<20
				p.RecordBatches = data
				tp.Partitions = append(tp.Partitions, p)
				resp.Topics = append(resp.Topics, tp)
				out := append([]byte{0, 0, 0, 0}, corr...)
				out = resp.AppendTo(out)
				binary.BigEndian.PutUint32(out, uint32(len(out)-4))
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return fb
}

func saramaBroker(t *testing.T, addr string) *sarama.Broker {
	conf := sarama.NewConfig()
	conf.Version = sarama.V2_1_0_0
	conf.ApiVersionsRequest = false
	b := sarama.NewBroker(addr)
	if err := b.Open(conf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// saramaEncode has sarama encode a batch (through a Produce request) and returns its bytes.
func saramaEncode(t *testing.T, sb *sarama.Broker, fb *fakeBroker, batch *sarama.RecordBatch) []byte {
	req := &sarama.ProduceRequest{RequiredAcks: sarama.NoResponse, Timeout: 1000, Version: 7}
	req.AddBatch("golden", 0, batch)
	if _, err := sb.Produce(req); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-fb.produced:
		if b == nil {
			t.Fatal("fake broker could not decode sarama's produce request")
		}
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no produce request arrived")
	}
	return nil
}

// saramaDecode has sarama decode record bytes (through a Fetch response).
func saramaDecode(t *testing.T, sb *sarama.Broker, fb *fakeBroker, data []byte) []*sarama.RecordBatch {
	fb.fetchData <- data
	req := &sarama.FetchRequest{Version: 10, MaxWaitTime: 1, MinBytes: 1}
	req.AddBlock("golden", 0, 0, 1<<20, -1)
	resp, err := sb.Fetch(req)
	if err != nil {
		t.Fatal(err)
	}
	blk := resp.GetBlock("golden", 0)
	if blk == nil {
		t.Fatal("no fetch block")
	}
	var out []*sarama.RecordBatch
	for _, rs := range blk.RecordsSet {
		if rs.RecordBatch != nil {
			out = append(out, rs.RecordBatch)
		}
	}
	return out
}

func TestGoldenKmsgAndSarama(t *testing.T) {
	fb := newFakeBroker(t)
	sb := saramaBroker(t, fb.ln.Addr().String())
	dir := filepath.Join(t.TempDir(), "golden-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()

	type input struct {
		name  string
		bytes []byte
	}
	var inputs []input
	for _, c := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		inputs = append(inputs, input{"kmsg-" + c.String(), kmsgBatch(ts, 5, c)})
	}
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		sbatch := &sarama.RecordBatch{Version: 2, Codec: codec, CompressionLevel: sarama.CompressionLevelDefault,
			FirstTimestamp: time.UnixMilli(ts), MaxTimestamp: time.UnixMilli(ts + 4), LastOffsetDelta: 4,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, PartitionLeaderEpoch: -1}
		for i := 0; i < 5; i++ {
			sbatch.Records = append(sbatch.Records, &sarama.Record{OffsetDelta: int64(i), TimestampDelta: time.Duration(i) * time.Millisecond,
				Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)),
				Headers: []*sarama.RecordHeader{{Key: []byte("h"), Value: []byte("v")}}})
		}
		inputs = append(inputs, input{"sarama-" + codec.String(), saramaEncode(t, sb, fb, sbatch)})
	}
	// The same uncompressed content encodes to the same bytes in both libraries.
	if !bytes.Equal(inputs[0].bytes, inputs[5].bytes) {
		t.Fatalf("kmsg and sarama encode the uncompressed batch differently:\n%x\n%x", inputs[0].bytes, inputs[5].bytes)
	}

	var firsts []int64
	for i, in := range inputs {
		orig := append([]byte(nil), in.bytes...)
		info, err := l.AppendAsLeader(in.bytes, int32(10+i))
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		firsts = append(firsts, info.FirstOffset)
		ri, err := l.Read(info.FirstOffset, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := ri.Bytes()
		if len(got) != len(orig) {
			t.Fatalf("%s: read %d bytes, appended %d", in.name, len(got), len(orig))
		}
		// Identical except baseOffset [0,8) and partitionLeaderEpoch [12,16).
		want := append([]byte(nil), orig...)
		binary.BigEndian.PutUint64(want, uint64(info.FirstOffset))
		binary.BigEndian.PutUint32(want[12:], uint32(10+i))
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: stored bytes differ beyond the rewritten fields", in.name)
		}
		// franz-go decodes it.
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(got); err != nil {
			t.Fatalf("%s: kmsg decode: %v", in.name, err)
		}
		if kb.FirstOffset != info.FirstOffset || kb.PartitionLeaderEpoch != int32(10+i) || kb.NumRecords != 5 ||
			uint32(kb.CRC) != recordbatch.CRC32C(got[21:]) {
			t.Fatalf("%s: kmsg header %+v", in.name, kb)
		}
		raw := kb.Records
		if c := recordbatch.Codec(kb.Attributes & 7); c != recordbatch.None {
			if raw, err = recordbatch.Decompress(c, raw); err != nil {
				t.Fatal(err)
			}
		}
		for j := 0; j < 5; j++ {
			var r kmsg.Record
			if err := r.ReadFrom(raw); err != nil {
				t.Fatalf("%s: kmsg record %d: %v", in.name, j, err)
			}
			if string(r.Key) != fmt.Sprintf("key-%d", j) || string(r.Value) != fmt.Sprintf("value-%d", j) || len(r.Headers) != 1 {
				t.Fatalf("%s: kmsg record %d: %+v", in.name, j, r)
			}
			raw = raw[int(r.Length)+varintLen(r.Length):]
		}
		// sarama decodes it.
		sbs := saramaDecode(t, sb, fb, got)
		if len(sbs) != 1 {
			t.Fatalf("%s: sarama decoded %d batches", in.name, len(sbs))
		}
		sbb := sbs[0]
		if sbb.FirstOffset != info.FirstOffset || sbb.PartitionLeaderEpoch != int32(10+i) || len(sbb.Records) != 5 {
			t.Fatalf("%s: sarama batch %+v", in.name, sbb)
		}
		for j, r := range sbb.Records {
			if string(r.Key) != fmt.Sprintf("key-%d", j) || string(r.Value) != fmt.Sprintf("value-%d", j) ||
				r.OffsetDelta != int64(j) || len(r.Headers) != 1 || string(r.Headers[0].Value) != "v" {
				t.Fatalf("%s: sarama record %d: %+v", in.name, j, r)
			}
		}
	}
	// The whole log decodes as one stream in both libraries too.
	ri, _ := l.Read(0, 1<<20, l.LogEndOffset(), true)
	all, _ := ri.Bytes()
	if got := saramaDecode(t, sb, fb, all); len(got) != len(inputs) {
		t.Fatalf("sarama decoded %d batches of the log, want %d", len(got), len(inputs))
	}
	_ = firsts
}

func varintLen(v int32) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], int64(v))
}
