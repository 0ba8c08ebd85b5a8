package logstore

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// BenchmarkAppendIdempotent compares AppendAsLeader of plain batches with idempotent ones
// (100 producers taking turns, each in sequence) in the same run; idempotent_vs_plain is
// the throughput ratio (Kafka's overhead is a few percent). Both loops rewrite the sequence
// and CRC of their batch, as a producer would, so only the broker side differs.
func BenchmarkAppendIdempotent(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 10}, {"16KiB", 16 << 10 / 107}} {
		b.Run(size.name, func(b *testing.B) {
			var plainNs float64
			for _, idem := range []bool{false, true} {
				name := "plain"
				if idem {
					name = "idempotent"
				}
				b.Run(name, func(b *testing.B) {
					l, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), LogOpenOptions{Config: DefaultLogConfig()})
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					const producers = 100
					batch := recordbatch.Batch(makeBatch(b, size.n, 100, time.Now().UnixMilli(), recordbatch.None, false))
					buf := make(recordbatch.Batch, len(batch))
					seqs := make([]int32, producers)
					b.SetBytes(int64(len(batch)))
					b.ReportAllocs()
					b.ResetTimer()
					start := time.Now()
					for i := 0; i < b.N; i++ {
						copy(buf, batch)
						pid, seq := int64(-1), int32(-1)
						epoch := int16(-1)
						if idem {
							p := i % producers
							pid, epoch, seq = int64(1000+p), 0, seqs[p]
							seqs[p] += int32(size.n)
						}
						binary.BigEndian.PutUint64(buf[43:], uint64(pid))
						binary.BigEndian.PutUint16(buf[51:], uint16(epoch))
						binary.BigEndian.PutUint32(buf[53:], uint32(seq))
						buf.SetCRC()
						if _, err := l.AppendAsLeader(buf, 0); err != nil {
							b.Fatal(err)
						}
					}
					ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
					if !idem {
						plainNs = ns
					} else if plainNs > 0 {
						b.ReportMetric(plainNs/ns, "idempotent_vs_plain")
					}
					if idem && len(l.ProducerStates()) != min(producers, b.N) {
						b.Fatal(fmt.Sprintf("%d producers known", len(l.ProducerStates())))
					}
				})
			}
		})
	}
}

// BenchmarkProducerStateCheck is the producer-state work of one leader append alone
// (duplicate lookup, checks, update), without I/O: the idempotence overhead per batch.
func BenchmarkProducerStateCheck(b *testing.B) {
	m := newProducerStateManager(b.TempDir(), OSFS{}, logT(b), 0, 0)
	batch := recordbatch.Batch(makeBatch(b, 10, 100, time.Now().UnixMilli(), recordbatch.None, false))
	const producers = 100
	seqs := make([]int32, producers)
	offset := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := i % producers
		binary.BigEndian.PutUint64(batch[43:], uint64(1000+p))
		binary.BigEndian.PutUint16(batch[51:], 0)
		binary.BigEndian.PutUint32(batch[53:], uint32(seqs[p]))
		batch.SetBaseOffset(offset)
		seqs[p] += 10
		if _, dup := m.findDuplicate(batch); dup {
			b.Fatal("duplicate")
		}
		pa := m.prepareAppend()
		if err := pa.validate(batch, OriginClient); err != nil {
			b.Fatal(err)
		}
		pa.update(batch)
		offset += 10
		_ = pa.commit(offset, nil)
	}
}
