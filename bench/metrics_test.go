package main

// The metrics benchmark (issue 17), as testing.B benchmarks because it compares a broker with
// itself:
//
//	go test ./bench -run '^$' -bench Metrics
//
//   - BenchmarkMetricsThroughput: two broker processes against one ZooKeeper (chroots of their
//     own), run in turn in the same round: "off" without samsa.http.listener, "on" with it and
//     a scraper reading /metrics every second (15 times Prometheus's default interval) while
//     the workload runs. kgo produce (acks=1, no compression, linger 0, 5 in flight) and a
//     groupless consume of one partition, 100 B records; one op is one record. The "on" rows
//     report on/off, their records/s over the "off" row's of the same round (goal: ≥ 0.97).
//     The rows alternate for SAMSA_BENCH_METRICS_ROUNDS rounds (3), "on" first in every
//     other round; use -count 1, and -benchtime 2000000x so that a row lasts over a second
//     (several scrapes) rather than the one b.N the default benchtime settles on.
//     The meters themselves are marked in both brokers (the registry always exists, only
//     the listener is optional); set SAMSA_BENCH_METRICS_OFF_BIN to a samsa binary built
//     without them (e.g. from the commit before issue 17) to measure their cost too.
//   - BenchmarkMetricsScrape: one broker hosting 1,000 partitions (and the same number of
//     per-partition kafka.log and kafka.cluster series); one op is one GET /metrics read to
//     the end. Reports the body's bytes and its series.
//
// `go test ./...` runs none of this: there are no Test functions here.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/internal/zktest"
)

// metBroker is one broker process of a metrics benchmark.
type metBroker struct {
	t    *target
	http string // samsa.http.listener, "" when off
}

// startMetBrokers builds samsa, starts ZooKeeper and one broker per name (with
// samsa.http.listener when httpOn[name]); everything stops when b ends.
func startMetBrokers(b *testing.B, names []string, httpOn map[string]bool, bins map[string]string) map[string]*metBroker {
	b.Helper()
	dir, err := os.MkdirTemp("", "samsa-bench-metrics-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := goBuild(dir, "samsa", "github.com/samsa-kafka/samsa/cmd/samsa")
	if err != nil {
		b.Fatal(err)
	}
	zk, err := zktest.StartProcess(filepath.Join(dir, "zookeeper"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(zk.Stop)
	out := map[string]*metBroker{}
	for _, name := range names {
		port, err := freePort()
		if err != nil {
			b.Fatal(err)
		}
		mb := &metBroker{}
		bdir := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(bdir, "data"), 0o755); err != nil {
			b.Fatal(err)
		}
		cfg := fmt.Sprintf("broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:%d\nlog.dirs=%s\nzookeeper.connect=%s\n"+
			"samsa.log.level=warn\noffsets.topic.replication.factor=1\n",
			port, filepath.Join(bdir, "data"), zk.Connect("bench-metrics-"+name))
		if httpOn[name] {
			hp, err := freePort()
			if err != nil {
				b.Fatal(err)
			}
			mb.http = fmt.Sprintf("127.0.0.1:%d", hp)
			cfg += "samsa.http.listener=" + mb.http + "\n"
		}
		cfgPath := filepath.Join(bdir, "server.properties")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			b.Fatal(err)
		}
		exe := bin
		if bins[name] != "" {
			exe = bins[name]
		}
		cmd, err := startProcess(filepath.Join(bdir, "broker.log"), exe, "broker", "--config", cfgPath)
		if err != nil {
			b.Fatal(err)
		}
		mb.t = &target{name: name, bootstrap: []string{fmt.Sprintf("127.0.0.1:%d", port)}, pids: []int{cmd.Process.Pid},
			dirs: []string{bdir}, stop: func() { stopProcess(cmd, 10*time.Second) }}
		b.Cleanup(mb.t.stop)
		if err := waitBrokers(context.Background(), mb.t.bootstrap, 1, 60*time.Second); err != nil {
			b.Fatalf("%v (log %s)", err, filepath.Join(bdir, "broker.log"))
		}
		out[name] = mb
	}
	return out
}

// scrape GETs /metrics and reads it to the end; it returns the body's size and its series
// (lines that are not comments).
func scrape(cl *http.Client, addr string) (bytes, series int, err error) {
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		bytes += len(line) + 1
		if len(line) > 0 && line[0] != '#' {
			series++
		}
	}
	return bytes, series, sc.Err()
}

// scrapeEvery scrapes addr every interval until the returned stop is called.
func scrapeEvery(b *testing.B, addr string, interval time.Duration) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	var first error
	go func() {
		defer close(finished)
		cl := &http.Client{Timeout: 10 * time.Second}
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			if _, _, err := scrape(cl, addr); err != nil && first == nil {
				first = err
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		if first != nil {
			b.Fatalf("scrape %s: %v", addr, first)
		}
	}
}

// metRates keeps the last "off" rate of each op, for the "on" row's ratio.
func BenchmarkMetricsThroughput(b *testing.B) {
	bins := map[string]string{"off": os.Getenv("SAMSA_BENCH_METRICS_OFF_BIN")}
	brokers := startMetBrokers(b, []string{"off", "on"}, map[string]bool{"on": true}, bins)
	topics := map[string]int64{} // consume topic -> records in it
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("SAMSA_BENCH_METRICS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	// Rounds alternate off and on (-count would run every "off" before any "on", leaving the
	// later rows a fuller disk and page cache), and which of the two goes first, so neither
	// always runs on the warmer machine.
	ratios := map[string][]float64{} // op -> on/off of each round (the last b.N's)
	for r := range rounds {
		for _, op := range []string{"produce", "consume"} {
			modes := []string{"off", "on"}
			if r%2 == 1 {
				modes = []string{"on", "off"}
			}
			rates := map[string]float64{}
			for _, mode := range modes {
				mb := brokers[mode]
				b.Run(op+"/"+mode, func(b *testing.B) {
					if mb.http != "" {
						defer scrapeEvery(b, mb.http, time.Second)()
					}
					if op == "produce" {
						rates[mode] = metProduce(b, mb, 100)
					} else {
						rates[mode] = metConsume(b, mb, topics, 100)
					}
					if on, off := rates["on"], rates["off"]; on > 0 && off > 0 {
						b.ReportMetric(on/off, "on/off")
					}
				})
			}
			if on, off := rates["on"], rates["off"]; on > 0 && off > 0 {
				ratios[op] = append(ratios[op], on/off)
			}
		}
	}
	for _, op := range []string{"produce", "consume"} {
		v := append([]float64(nil), ratios[op]...)
		sort.Float64s(v)
		if len(v) > 0 {
			fmt.Printf("metrics %s: records/s on/off, median of %d rounds: %.3f (all: %.3f)\n", op, len(v), v[len(v)/2], ratios[op])
		}
	}
}

// metProduce produces b.N records of size bytes to a one-partition topic and returns rec/s.
func metProduce(b *testing.B, mb *metBroker, size int) float64 {
	ctx := context.Background()
	topic := "produce-" + mb.t.name
	if err := createTopic(ctx, mb.t.bootstrap, topic, 1, 1); err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		b.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(mb.t.bootstrap...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warmup")}).FirstErr(); err != nil {
		b.Fatalf("warmup produce: %v", err)
	}
	vals := payloads(size)
	var mu sync.Mutex
	var firstErr error
	b.SetBytes(int64(size))
	settle()
	cpu0 := mb.t.cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: vals[i%len(vals)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return metReport(b, mb.t.cpuSeconds()-cpu0)
}

// metConsume reads b.N records from the start of a one-partition topic (topped up outside
// the timed part) and returns rec/s.
func metConsume(b *testing.B, mb *metBroker, topics map[string]int64, size int) float64 {
	ctx := context.Background()
	topic := "consume-" + mb.t.name
	have, ok := topics[topic]
	if !ok {
		if err := createTopic(ctx, mb.t.bootstrap, topic, 1, 1); err != nil {
			b.Fatal(err)
		}
	}
	if need := int64(b.N) - have; need > 0 {
		r, err := produceKgo(ctx, mb.t.bootstrap, topic, need, size, false, "")
		if err != nil {
			b.Fatal(err)
		}
		have += r.records + 1 // + produceKgo's warm-up record
	}
	topics[topic] = have
	cl, err := kgo.NewClient(kgo.SeedBrokers(mb.t.bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	settle()
	cpu0 := mb.t.cpuSeconds()
	b.ResetTimer()
	var got int
	for got < b.N {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		got += fs.NumRecords()
	}
	b.StopTimer()
	return metReport(b, mb.t.cpuSeconds()-cpu0)
}

// metReport reports records/s and the broker's CPU per million records; it returns records/s.
func metReport(b *testing.B, brokerCPU float64) float64 {
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "rec/s")
	b.ReportMetric(brokerCPU/float64(b.N)*1e6, "broker-cpu-s/M-rec")
	return rate
}

func BenchmarkMetricsScrape(b *testing.B) {
	mb := startMetBrokers(b, []string{"scrape"}, map[string]bool{"scrape": true}, nil)["scrape"]
	const partitions = 1000
	ctx := context.Background()
	if err := createTopic(ctx, mb.t.bootstrap, "scrape-1000", partitions, 1); err != nil {
		b.Fatal(err)
	}
	// Some traffic, so the per-request and per-topic series exist as on a busy broker.
	if _, err := produceKgo(ctx, mb.t.bootstrap, "scrape-1000", 10000, 100, false, ""); err != nil {
		b.Fatal(err)
	}
	cl := &http.Client{Timeout: 30 * time.Second}
	size, series, err := scrape(cl, mb.http)
	if err != nil {
		b.Fatal(err)
	}
	if series < 4*partitions {
		b.Fatalf("%d series for %d partitions: the per-partition log gauges are missing", series, partitions)
	}
	settle()
	cpu0 := mb.t.cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if size, series, err = scrape(cl, mb.http); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(size), "body-bytes")
	b.ReportMetric(float64(series), "series")
	b.ReportMetric((mb.t.cpuSeconds()-cpu0)/float64(b.N)*1e3, "broker-cpu-ms/op")
}
