package integration

// BenchmarkReplication (issue 5): produce throughput with replication factor 3 and
// acks=all against replication factor 1 and acks=1 on the same 3-broker cluster of
// processes (Kafka's published ratio is about 0.5), and the latency of acks=all produce at
// a fixed 10,000 records/s. Run: go test ./integration -run '^$' -bench BenchmarkReplication -benchtime=1x

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func BenchmarkReplication(b *testing.B) {
	c := StartCluster(b, ClusterConfig{Brokers: 3, Process: true})
	two := "2"
	createTopic(b, c, "bench-rf1", 3, 1, nil)
	createTopic(b, c, "bench-rf3", 3, 3, map[string]*string{"min.insync.replicas": &two})
	const window = 5 * time.Second
	value := make([]byte, 100)
	for i := range value {
		value[i] = byte(rand.IntN(256)) // incompressible, like real payloads
	}

	client := func(acks kgo.Acks, linger time.Duration) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.RequiredAcks(acks), kgo.WithLogger(kgoTestLogger(b)),
			kgo.ProducerLinger(linger), kgo.MaxBufferedRecords(50000)}
		if acks != kgo.AllISRAcks() {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		return cl
	}
	// throughput produces as fast as the client buffers allow for the window.
	throughput := func(topic string, acks kgo.Acks) float64 {
		cl := client(acks, 5*time.Millisecond)
		defer cl.Close()
		var acked, failed atomic.Int64
		ctx := context.Background()
		start := time.Now()
		for i := 0; time.Since(start) < window; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 100)), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				} else {
					acked.Add(1)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		if failed.Load() > 0 {
			b.Fatalf("%s: %d records failed", topic, failed.Load())
		}
		return float64(acked.Load()) / el.Seconds()
	}

	for range b.N {
		rf1 := throughput("bench-rf1", kgo.LeaderAck())
		rf3 := throughput("bench-rf3", kgo.AllISRAcks())
		b.ReportMetric(rf1, "rf1_acks1_rec/s")
		b.ReportMetric(rf3, "rf3_acksall_rec/s")
		b.ReportMetric(rf3/rf1, "ratio")

		// Latency of acks=all at a fixed 10,000 records/s (10 every millisecond), with
		// linger.ms=0 as Kafka 3.7's producer default.
		cl := client(kgo.AllISRAcks(), 0)
		var mu sync.Mutex
		var lat []time.Duration
		var failed atomic.Int64
		ctx := context.Background()
		tick := time.NewTicker(time.Millisecond)
		start := time.Now()
		sent := 0
		for now := range tick.C {
			if now.Sub(start) >= window {
				break
			}
			for sent < int(now.Sub(start).Seconds()*10000) {
				sent++
				t0 := time.Now()
				cl.Produce(ctx, &kgo.Record{Topic: "bench-rf3", Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						return
					}
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				})
			}
		}
		tick.Stop()
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		cl.Close()
		if failed.Load() > 0 || len(lat) == 0 {
			b.Fatalf("latency run: %d failed, %d acked", failed.Load(), len(lat))
		}
		slices.Sort(lat)
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
		b.ReportMetric(float64(len(lat))/window.Seconds(), "lat_run_rec/s")
		b.ReportMetric(p(0.50), "p50_ms")
		b.ReportMetric(p(0.99), "p99_ms")
		b.Logf("rf1 acks=1 %.0f rec/s, rf3 acks=all %.0f rec/s (ratio %.2f); acks=all at 10k rec/s: p50 %.2f ms p99 %.2f ms over %d records",
			rf1, rf3, rf3/rf1, p(0.5), p(0.99), len(lat))
	}
}
