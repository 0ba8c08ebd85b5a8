package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceIdempotence: franz-go producing 100-byte records (acks=all, async,
// batched by the client, one request in flight) to one partition over loopback, idempotence off then on, in the
// same run; idempotent_vs_plain is the throughput ratio (Kafka's overhead is a few percent).
func BenchmarkProduceIdempotence(b *testing.B) {
	var plainNs float64
	for _, idem := range []bool{false, true} {
		name := "plain"
		if idem {
			name = "idempotent"
		}
		b.Run(name, func(b *testing.B) {
			e := quietEnv(b)
			withFakeProducerIDs(e)
			e.createTopic("bench", 1)
			e.serve()
			kopts := []kgo.Opt{kgo.SeedBrokers(e.addr), kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()),
				// The same pipelining both ways (kgo defaults differ: 1 without idempotence, 5 with).
				kgo.MaxProduceRequestsInflightPerBroker(1)}
			if !idem {
				kopts = append(kopts, kgo.DisableIdempotentWrite())
			}
			cl, err := kgo.NewClient(kopts...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// Warm up: metadata, and the producer id for the idempotent run.
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 100)
			var failed error
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
					if err != nil && failed == nil {
						failed = err
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
			b.ReportMetric(1e9/ns, "records/s")
			if !idem {
				plainNs = ns
			} else if plainNs > 0 {
				b.ReportMetric(plainNs/ns, "idempotent_vs_plain")
			}
		})
	}
}
