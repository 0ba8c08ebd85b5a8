package logstore

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppendDuringRoll measures AppendAsLeader latency of 16 KiB batches on a log with
// 4 MiB segments, so a roll (old segment fsync, producer snapshot) comes every ~256 appends,
// and, in "flushing", with another goroutine calling Flush in a loop (the flush.ms ticker at
// its most eager). Appends that wait behind an fsync show up in p99 and max.
func BenchmarkAppendDuringRoll(b *testing.B) {
	batch := bench16K(b)
	for _, flushing := range []bool{false, true} {
		name := "roll"
		if flushing {
			name = "roll+flushing"
		}
		b.Run(name, func(b *testing.B) {
			cfg, err := NewLogConfig(nil, map[string]string{"segment.bytes": "4194304"})
			if err != nil {
				b.Fatal(err)
			}
			l, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), LogOpenOptions{Config: cfg})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if flushing {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := l.Flush(); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			buf := append([]byte(nil), batch...)
			lat := make([]time.Duration, 0, b.N)
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, batch)
				start := time.Now()
				if _, err := l.AppendAsLeader(buf, 1); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
			b.ReportMetric(ms(lat[len(lat)*999/1000]), "p999_ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max_ms")
			b.ReportMetric(float64(len(l.Segments())-1)/float64(b.N), "rolls/op")
		})
	}
}
