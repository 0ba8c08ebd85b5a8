package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// zcTestFile is a segment-like file holding n distinct bytes.
func zcTestFile(t testing.TB, n int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// zcTestResponse builds a Fetch response exercising every field the framing encoder
// writes, and the file regions of its zero-copy partitions.
func zcTestResponse(version int16, f *os.File) (*kmsg.FetchResponse, []zeroCopyPart) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = 5, 0, 77
	var parts []zeroCopyPart
	for ti, name := range []string{"orders", "a-much-longer-topic-name.with.dots_and_underscores"} {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = name
		t.TopicID = [16]byte{byte(ti + 1), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		for pi := range 5 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = 1000+int64(pi), 990, 3
			p.RecordBatches = []byte{}
			switch pi {
			case 0: // zero-copy, one region
				parts = append(parts, zeroCopyPart{ti, pi, logstore.ReadInfo{Regions: []logstore.FileRegion{{File: f, Pos: 10, Len: 300}}, Size: 300}})
			case 1: // error, null records, aborted transactions, leader hint
				p.ErrorCode = 6
				p.RecordBatches = nil
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 9, FirstOffset: 8}}
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 11
				p.PreferredReadReplica = 1
			case 2: // zero-copy, two regions; diverging epoch and snapshot id
				parts = append(parts, zeroCopyPart{ti, pi, logstore.ReadInfo{Regions: []logstore.FileRegion{{File: f, Pos: 0, Len: 70}, {File: f, Pos: 5000, Len: 200}}, Size: 270}})
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 4, 400
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 12, 3
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 3: // inline records (copy path)
				p.RecordBatches = []byte("inline-bytes")
			case 4: // zero-copy, large enough for a 2-byte uvarint length
				parts = append(parts, zeroCopyPart{ti, pi, logstore.ReadInfo{Regions: []logstore.FileRegion{{File: f, Pos: 1, Len: 9000}}, Size: 9000}})
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if version >= 16 {
		rack := "r1"
		resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "h1", Port: 9092, Rack: &rack}, {NodeID: 2, Host: "host-two", Port: 9093}}
	}
	return resp, parts
}

// splicedFrame materializes a zero-copy frame with pread, as the socket would receive it.
func splicedFrame(t testing.TB, buf []byte, splices []splice) []byte {
	var out []byte
	prev := 0
	for _, s := range splices {
		out = append(out, buf[prev:s.at]...)
		prev = s.at
		for _, r := range s.regions {
			b := make([]byte, r.Len)
			if _, err := r.File.ReadAt(b, r.Pos); err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
	}
	return append(out, buf[prev:]...)
}

func TestFetchFramingMatchesKmsg(t *testing.T) {
	f, data := zcTestFile(t, 10000)
	for v := int16(4); v <= 16; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			resp, parts := zcTestResponse(v, f)
			buf, splices, err := appendFetchFrame(nil, 42, resp, parts)
			if err != nil {
				t.Fatal(err)
			}
			if len(splices) != 2*3 {
				t.Fatalf("got %d splices, want 6", len(splices))
			}
			got := splicedFrame(t, buf, splices)

			// kmsg's encoding of the same response with the records inline.
			for _, p := range parts {
				var b []byte
				for _, r := range p.info.Regions {
					b = append(b, data[r.Pos:r.Pos+r.Len]...)
				}
				resp.Topics[p.ti].Partitions[p.pi].RecordBatches = b
			}
			want := appendResponse(nil, 42, resp)
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Fatalf("v%d: frames differ at byte %d (got %d bytes, want %d)", v, i, len(got), len(want))
			}
			// and it decodes
			dec := kmsg.NewPtrFetchResponse()
			dec.Version = v
			if err := dec.ReadFrom(got[4+4+map[bool]int{true: 1}[v >= 12]:]); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFetchFramingUnknownTags(t *testing.T) {
	f, _ := zcTestFile(t, 10000)
	resp, parts := zcTestResponse(12, f)
	resp.Topics[0].Partitions[1].UnknownTags.Set(9, []byte{1})
	if _, _, err := appendFetchFrame(nil, 1, resp, parts); err == nil {
		t.Fatal("want errUnknownTags")
	}
}

// TestZeroCopyFetchOverSocket fetches through two socket servers on the same broker, one
// sending records with sendfile and one copying them, and checks that every Fetch version
// gets byte-identical response frames.
func TestZeroCopyFetchOverSocket(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("zc", 3)
	for i := range 6 {
		e.produce(produceReq(9, 1, 1000, "zc", 0, valuesBatch(10+i, 100*(i+1))))
		e.produce(produceReq(9, 1, 1000, "zc", 1, valuesBatch(3, 40000)))
	}
	zeroCopy := e.serve().Addr().String()
	copying := e.serve(func(s *SocketServer) { s.CopyFetchRecords = true }).Addr().String()
	zc, cp := dialTest(t, zeroCopy), dialTest(t, copying)

	for v := int16(4); v <= 16; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "zc", e.topics["zc"]
		for _, p := range []struct {
			p   int32
			off int64
		}{{0, 0}, {1, 4}, {2, 0}, {9, 0}} { // records, records from mid-log, empty, unknown
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p.p, p.off, 200000, -1
			rt.Partitions = append(rt.Partitions, fp)
		}
		req.Topics = append(req.Topics, rt)

		corr := int32(100 + v)
		zc.write(encodeFrame(req, corr))
		got, err := zc.readFrame()
		if err != nil {
			t.Fatalf("v%d zero-copy: %v", v, err)
		}
		cp.write(encodeFrame(req, corr))
		want, err := cp.readFrame()
		if err != nil {
			t.Fatalf("v%d copying: %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d: zero-copy frame (%d bytes) differs from copied frame (%d bytes)", v, len(got), len(want))
		}
		resp := decodeResponseFrame(t, append(binary.BigEndian.AppendUint32(nil, uint32(len(got))), got...), 1, v, corr).(*kmsg.FetchResponse)
		ps := resp.Topics[0].Partitions
		if len(ps[0].RecordBatches) == 0 || len(ps[1].RecordBatches) < 100000 || len(ps[2].RecordBatches) != 0 || ps[3].ErrorCode == 0 {
			t.Fatalf("v%d: unexpected response: p0 %d bytes, p1 %d bytes, p2 %d bytes, p9 error %d", v,
				len(ps[0].RecordBatches), len(ps[1].RecordBatches), len(ps[2].RecordBatches), ps[3].ErrorCode)
		}
		if got := batchOffsets(t, ps[1].RecordBatches); got[0][0] > 4 {
			t.Fatalf("v%d: partition 1 starts at %d", v, got[0][0])
		}
	}
}

// BenchmarkZeroCopyFetch measures a Fetch of one partition over loopback, with sendfile
// and with the copying path; allocs/op is per fetch (client side included).
func BenchmarkZeroCopyFetch(b *testing.B) {
	for _, mode := range []struct {
		name string
		copy bool
	}{{"sendfile", false}, {"copy", true}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newDataEnv(b)
			e.log.Logger.SetLevel(logrus.WarnLevel) // per-request debug lines would dominate
			e.createTopic("zcb", 1)
			for range 16 {
				e.produce(produceReq(9, 1, 1000, "zcb", 0, valuesBatch(64, 1000)))
			}
			addr := e.serve(func(s *SocketServer) { s.CopyFetchRecords = mode.copy }).Addr().String()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := fetchReq(12, 0, 1, 1<<20, "zcb", map[int32]int64{0: 0}, 1<<20)
			frame := encodeFrame(req, 1)
			var size [4]byte
			body := make([]byte, 2<<20)
			b.ReportAllocs()
			b.ResetTimer()
			var n int
			for range b.N {
				if _, err := c.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, size[:]); err != nil {
					b.Fatal(err)
				}
				n = int(binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(c, body[:n]); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(n))
			if n < 16*64*1000 {
				b.Fatalf("response %d bytes", n)
			}
		})
	}
}

// smallSendBufListener shrinks each accepted connection's send buffer, so sendfile fills
// it and must wait for the poller (EAGAIN) many times per response. (Far smaller buffers
// stall loopback TCP itself, copying path included: the 64 KiB MSS defeats window updates.)
type smallSendBufListener struct{ net.Listener }

func (l smallSendBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(32 << 10)
	}
	return c, err
}

// TestZeroCopyFetchSlowReader: a 1 MiB+ response through a tiny send buffer to a client
// that starts reading late arrives whole and identical to the copying path's.
func TestZeroCopyFetchSlowReader(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("slow", 1)
	for range 10 {
		e.produce(produceReq(9, 1, 1000, "slow", 0, valuesBatch(4, 30000)))
	}
	copying := e.serve(func(s *SocketServer) { s.CopyFetchRecords = true }).Addr().String()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSocketServer(smallSendBufListener{l}, "PLAINTEXT", e.apis, e.cfg.SocketRequestMaxBytes, e.log)
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() { s.Close(); <-done })

	req := fetchReq(11, 0, 1, 4<<20, "slow", map[int32]int64{0: 0}, 4<<20)
	zc, cp := dialTest(t, l.Addr().String()), dialTest(t, copying)
	zc.write(encodeFrame(req, 7))
	time.Sleep(200 * time.Millisecond) // let the server block on a full buffer
	got, err := zc.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	cp.write(encodeFrame(req, 7))
	want, err := cp.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 1<<20 || !bytes.Equal(got, want) {
		t.Fatalf("zero-copy %d bytes, copying %d bytes, equal %v", len(got), len(want), bytes.Equal(got, want))
	}
}
