package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quietEnv is a dataEnv whose logs are discarded (benchmarks).
func quietEnv(b *testing.B) *dataEnv {
	e := newDataEnv(b)
	e.log.Logger.SetLevel(logrus.ErrorLevel)
	return e
}

// BenchmarkSocketProduce: one connection, produce acks=1 one batch at a time over loopback
// through the SocketServer into a real log (no fsync per append, as Kafka by default).
// The baseline sub-benchmark sends the same frames to a loopback server that only reads
// them and answers 12 bytes, so the ratio is samsa's cost over bare TCP.
func BenchmarkSocketProduce(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 256 << 10} {
		batch := valuesBatch(max(1, size/1024), 1000)
		frame := encodeFrame(produceReq(9, 1, 5000, "bench", 0, batch), 1)

		b.Run(fmt.Sprintf("samsa/%dKiB", size>>10), func(b *testing.B) {
			e := quietEnv(b)
			e.createTopic("bench", 1)
			e.serve()
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			runProduceBench(b, c, frame)
		})
		b.Run(fmt.Sprintf("baseline-tcp/%dKiB", size>>10), func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			go func() {
				s, err := l.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				var hdr [4]byte
				buf := make([]byte, len(frame))
				resp := make([]byte, 16)
				binary.BigEndian.PutUint32(resp, 12)
				for {
					if _, err := io.ReadFull(s, hdr[:]); err != nil {
						return
					}
					if _, err := io.ReadFull(s, buf[:binary.BigEndian.Uint32(hdr[:])]); err != nil {
						return
					}
					if _, err := s.Write(resp); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			runProduceBench(b, c, frame)
		})
	}
}

func runProduceBench(b *testing.B, c net.Conn, frame []byte) {
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	var hdr [4]byte
	buf := make([]byte, 1<<16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := c.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			b.Fatal(err)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}

// BenchmarkSocketFetch: one connection, consumer fetches of up to 1 MiB from a filled log.
func BenchmarkSocketFetch(b *testing.B) {
	e := quietEnv(b)
	e.createTopic("fb", 1)
	for i := 0; i < 256; i++ {
		if p := e.produce(produceReq(9, 1, 5000, "fb", 0, valuesBatch(16, 1000))); p.ErrorCode != 0 {
			b.Fatal(p)
		}
	}
	e.serve()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	frame := encodeFrame(fetchReq(12, 0, 1, 1<<20, "fb", map[int32]int64{0: 0}, 1<<20), 1)
	var hdr [4]byte
	buf := make([]byte, 2<<20)
	b.ReportAllocs()
	var total int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			b.Fatal(err)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			b.Fatal(err)
		}
		total += int64(n)
	}
	b.StopTimer()
	b.SetBytes(total / int64(b.N))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	if err := resp.ReadFrom(buf[5:hdr2len(hdr)]); err != nil || len(resp.Topics[0].Partitions[0].RecordBatches) < 1<<19 {
		b.Fatalf("last fetch: %v", err)
	}
}

func hdr2len(h [4]byte) uint32 { return binary.BigEndian.Uint32(h[:]) }

// produceShapes are the request shapes whose allocations per request are reported.
var produceShapes = []produceShape{
	{1, 10, 1}, {1, 1000, 1}, {6, 10, 1},
	{1, 10, 0}, {1, 1000, 0}, {6, 10, 0},
	{1, 10, -1}, {1, 1000, -1}, {6, 10, -1},
}

// BenchmarkProducePath: one produce request from its wire bytes to its response bytes in
// process (decode, handler, append to a real log, encode), so B/op and allocs/op are the
// broker's own per request, with no client or socket in the count. acks=-1 completes at
// once (single broker). records/op is reported to show allocations do not follow it.
func BenchmarkProducePath(b *testing.B) {
	for _, shape := range produceShapes {
		b.Run(shape.String(), func(b *testing.B) {
			e := quietEnv(b)
			w := newProduceWire(b, e, shape)
			ctx := context.Background()
			if _, err := w.roundTrip(ctx); err != nil { // warm up pools and the segment
				b.Fatal(err)
			}
			start := w.logEnd(b)
			b.SetBytes(int64(len(w.frame)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := w.roundTrip(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if got, want := w.logEnd(b)-start, int64(b.N*shape.records); got != want {
				b.Fatalf("appended %d records to partition 0, want %d", got, want)
			}
			b.ReportMetric(float64(int(shape.partitions)*shape.records), "records/op")
		})
	}
}
