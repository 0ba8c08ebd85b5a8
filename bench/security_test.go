package main

// The security benchmark (issue 14), as testing.B benchmarks because it compares a broker
// with itself rather than with kfake:
//
//	go test ./bench -run '^$' -bench Security -count 3
//
// One samsa broker process (ZooKeeper from Debian's zookeeper package via internal/zktest)
// serves the same log on four listeners: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL, with a
// PKCS12 key store from internal/security/testcerts and PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 enabled (SCRAM credentials at 4096 iterations, Kafka's minimum, created
// through AlterUserScramCredentials). No authorizer: this measures transport and login.
//
//   - BenchmarkSecurityThroughput: kgo produce (acks=1, linger 0, no compression, 5 requests
//     in flight, as bench's produce rows) and a groupless kgo consume of one partition, with
//     100 B and 10 KiB records, over PLAINTEXT and over SSL. One op is one record. On SSL the
//     broker copies fetched records through user space (no sendfile).
//   - BenchmarkSecurityAuth: one op is one new connection made ready for requests by
//     internal/kclient's Dialer (the broker's own inter-broker client): TCP connect, TLS
//     handshake on the TLS listeners (full handshake, no session resumption), ApiVersions,
//     then SaslHandshake v1 and SaslAuthenticate rounds on the SASL listeners; then close.
//
// Besides ns/op, each benchmark reports the broker's CPU (from /proc/<pid>/stat, 10 ms
// ticks) and, for logins, the benchmark process's own CPU (getrusage), per op. When the
// benchmarks end, TestMain prints the medians of the rounds (-count) and the ratios against
// the plaintext rows. `go test ./...` runs none of this: there are no Test functions here,
// and the broker starts only when a benchmark runs.

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

const (
	secUser     = "bench"
	secPassword = "bench-secret"
)

// secBroker is the broker every security benchmark shares, started on first use.
var secBroker struct {
	once  sync.Once
	err   error
	dir   string
	zk    *zktest.Server
	t     *target
	addr  map[string]string // listener name (= protocol) -> host:port
	tls   *tls.Config       // client side: trusts the test CA
	mu    sync.Mutex
	count map[string]int64 // consume topic -> records in it
}

func TestMain(m *testing.M) {
	code := m.Run()
	if secBroker.t != nil {
		secBroker.t.stop()
	}
	if secBroker.zk != nil {
		secBroker.zk.Stop()
	}
	if secBroker.dir != "" {
		os.RemoveAll(secBroker.dir)
	}
	if code == 0 {
		fmt.Print(secRounds.summary())
	}
	os.Exit(code)
}

func secEnv(b *testing.B) {
	b.Helper()
	secBroker.once.Do(func() { secBroker.err = startSecBroker() })
	if secBroker.err != nil {
		b.Fatal(secBroker.err)
	}
}

// startSecBroker builds samsa, starts ZooKeeper and one broker with the four listeners, and
// gives the bench user its SCRAM credentials.
func startSecBroker() error {
	dir, err := os.MkdirTemp("", "samsa-bench-security-")
	if err != nil {
		return err
	}
	secBroker.dir = dir
	bin, err := goBuild(dir, "samsa", "github.com/samsa-kafka/samsa/cmd/samsa")
	if err != nil {
		return err
	}
	certs, err := testcerts.Generate(filepath.Join(dir, "certs"), nil)
	if err != nil {
		return err
	}
	secBroker.tls = certs.ClientConfig(nil)
	if secBroker.zk, err = zktest.StartProcess(filepath.Join(dir, "zookeeper")); err != nil {
		return err
	}
	secBroker.addr = map[string]string{}
	var listeners []string
	for _, name := range []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"} {
		port, err := freePort()
		if err != nil {
			return err
		}
		secBroker.addr[name] = fmt.Sprintf("127.0.0.1:%d", port)
		listeners = append(listeners, fmt.Sprintf("%s://127.0.0.1:%d", name, port))
	}
	bdir := filepath.Join(dir, "broker")
	if err := os.MkdirAll(filepath.Join(bdir, "data"), 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`broker.id=1
listeners=%s
log.dirs=%s
zookeeper.connect=%s
samsa.log.level=warn
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
ssl.keystore.type=PKCS12
ssl.keystore.location=%s
ssl.keystore.password=%s
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
`, strings.Join(listeners, ","), filepath.Join(bdir, "data"), secBroker.zk.Connect("bench-security"),
		certs.Broker.PKCS12, certs.Password)
	for _, l := range []string{"sasl_plaintext", "sasl_ssl"} {
		cfg += fmt.Sprintf("listener.name.%s.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_%s=%q;\n",
			l, secUser, secPassword)
		for _, m := range []string{"scram-sha-256", "scram-sha-512"} {
			cfg += fmt.Sprintf("listener.name.%s.%s.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n", l, m)
		}
	}
	cfgPath := filepath.Join(bdir, "server.properties")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	cmd, err := startProcess(filepath.Join(bdir, "broker.log"), bin, "broker", "--config", cfgPath)
	if err != nil {
		return err
	}
	secBroker.t = &target{name: "samsa-security", bootstrap: []string{secBroker.addr["PLAINTEXT"]},
		pids: []int{cmd.Process.Pid}, dirs: []string{bdir}, stop: func() { stopProcess(cmd, 10*time.Second) }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := waitBrokers(ctx, secBroker.t.bootstrap, 1, 60*time.Second); err != nil {
		return fmt.Errorf("%w (log %s)", err, filepath.Join(bdir, "broker.log"))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(secBroker.t.bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: secUser, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: secPassword},
		{User: secUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: secPassword},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create SCRAM credentials: %w", err)
	}
	// The broker's credential cache follows /config/users through a change notification.
	for _, m := range []sasl.Mechanism{secMechanism("SCRAM-SHA-256"), secMechanism("SCRAM-SHA-512")} {
		for {
			c, err := (&kclient.Dialer{SASL: m}).Dial(ctx, secBroker.addr["SASL_PLAINTEXT"], "bench")
			if err == nil {
				c.Close()
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("SCRAM login never succeeded: %w", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	secBroker.count = map[string]int64{}
	return nil
}

func secMechanism(name string) sasl.Mechanism {
	switch name {
	case "PLAIN":
		return plain.Auth{User: secUser, Pass: secPassword}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: secUser, Pass: secPassword}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: secUser, Pass: secPassword}.AsSha512Mechanism()
	}
	panic(name)
}

// secClientOpts are the kgo options to reach the broker over listener (PLAINTEXT or SSL).
func secClientOpts(listener string) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(secBroker.addr[listener])}
	if listener == "SSL" {
		opts = append(opts, kgo.DialTLSConfig(secBroker.tls.Clone()))
	}
	return opts
}

func BenchmarkSecurityThroughput(b *testing.B) {
	secEnv(b)
	for _, op := range []string{"produce", "consume"} {
		for _, size := range []int{100, 10240} {
			for _, listener := range []string{"PLAINTEXT", "SSL"} {
				name := fmt.Sprintf("%s/%s/%s", op, sizeName(size), listener)
				b.Run(name, func(b *testing.B) {
					if op == "produce" {
						benchProduce(b, name, listener, size)
					} else {
						benchConsume(b, name, listener, size)
					}
				})
			}
		}
	}
}

// secTopic creates a one-partition topic once and returns its name.
func secTopic(b *testing.B, name string) string {
	topic := "sec-" + strings.NewReplacer("/", "-").Replace(name)
	secBroker.mu.Lock()
	defer secBroker.mu.Unlock()
	if _, ok := secBroker.count[topic]; !ok {
		if err := createTopic(context.Background(), secBroker.t.bootstrap, topic, 1, 1); err != nil {
			b.Fatal(err)
		}
		secBroker.count[topic] = 0
	}
	return topic
}

func benchProduce(b *testing.B, name, listener string, size int) {
	ctx := context.Background()
	topic := secTopic(b, name)
	cl, err := kgo.NewClient(append(secClientOpts(listener), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
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
	cpu0 := secBroker.t.cpuSeconds()
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
	secReport(b, name, secBroker.t.cpuSeconds()-cpu0, 0)
}

func benchConsume(b *testing.B, name, listener string, size int) {
	ctx := context.Background()
	topic := secTopic(b, name)
	// Top the topic up to b.N records over PLAINTEXT, outside the timed part.
	secBroker.mu.Lock()
	have := secBroker.count[topic]
	secBroker.mu.Unlock()
	if need := int64(b.N) - have; need > 0 {
		r, err := produceKgo(ctx, secBroker.t.bootstrap, topic, need, size, false, "")
		if err != nil {
			b.Fatal(err)
		}
		secBroker.mu.Lock()
		secBroker.count[topic] = have + r.records + 1 // + produceKgo's warm-up record
		secBroker.mu.Unlock()
	}
	cl, err := kgo.NewClient(append(secClientOpts(listener),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	settle()
	cpu0 := secBroker.t.cpuSeconds()
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
	secReport(b, name, secBroker.t.cpuSeconds()-cpu0, 0)
}

func BenchmarkSecurityAuth(b *testing.B) {
	secEnv(b)
	cases := []struct {
		name, listener, mechanism string
	}{
		{"PLAINTEXT", "PLAINTEXT", ""},
		{"SSL", "SSL", ""},
		{"SASL_PLAINTEXT/PLAIN", "SASL_PLAINTEXT", "PLAIN"},
		{"SASL_PLAINTEXT/SCRAM-SHA-256", "SASL_PLAINTEXT", "SCRAM-SHA-256"},
		{"SASL_PLAINTEXT/SCRAM-SHA-512", "SASL_PLAINTEXT", "SCRAM-SHA-512"},
		{"SASL_SSL/PLAIN", "SASL_SSL", "PLAIN"},
		{"SASL_SSL/SCRAM-SHA-256", "SASL_SSL", "SCRAM-SHA-256"},
		{"SASL_SSL/SCRAM-SHA-512", "SASL_SSL", "SCRAM-SHA-512"},
	}
	for _, c := range cases {
		name := "auth/" + c.name
		b.Run(c.name, func(b *testing.B) {
			d := &kclient.Dialer{Timeout: 10 * time.Second}
			if strings.HasSuffix(c.listener, "SSL") {
				d.TLS = secBroker.tls
			}
			if c.mechanism != "" {
				d.SASL = secMechanism(c.mechanism)
			}
			addr := secBroker.addr[c.listener]
			ctx := context.Background()
			cpu0, self0 := secBroker.t.cpuSeconds(), selfCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				conn, err := d.Dial(ctx, addr, "bench")
				if err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
			b.StopTimer()
			secReport(b, name, secBroker.t.cpuSeconds()-cpu0, selfCPU()-self0)
		})
	}
}

// settle starts a timed part with no dirty pages left by the one before (the kernel's
// writeback would stall appends and bill the broker) and a fresh client heap, as bench's
// rows do.
func settle() {
	syscall.Sync()
	runtime.GC()
}

// selfCPU is this process's user+system CPU seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// secReport adds the per-op metrics and remembers the run for the summary.
func secReport(b *testing.B, name string, brokerCPU, clientCPU float64) {
	perOp := b.Elapsed().Seconds() / float64(b.N)
	m := secMeasure{n: b.N, perOp: perOp, brokerCPU: brokerCPU / float64(b.N), clientCPU: clientCPU / float64(b.N)}
	if strings.HasPrefix(name, "auth/") {
		b.ReportMetric(m.brokerCPU*1e6, "broker-cpu-µs/op")
		b.ReportMetric(m.clientCPU*1e6, "client-cpu-µs/op")
	} else {
		b.ReportMetric(1/perOp, "rec/s")
		b.ReportMetric(m.brokerCPU*1e6, "broker-cpu-s/M-rec")
	}
	secRounds.add(name, m)
}

type secMeasure struct {
	n                    int
	perOp                float64 // seconds
	brokerCPU, clientCPU float64 // seconds per op
}

// secRounds keeps, per benchmark, the final b.N of each round: the testing package calls a
// benchmark with b.N = 1 first, then with growing b.N, and reports the last call.
var secRounds = &roundLog{runs: map[string][]secMeasure{}}

type roundLog struct {
	mu    sync.Mutex
	order []string
	runs  map[string][]secMeasure
}

func (r *roundLog) add(name string, m secMeasure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs, ok := r.runs[name]
	if !ok {
		r.order = append(r.order, name)
	}
	if m.n == 1 || len(rs) == 0 {
		rs = append(rs, m)
	} else {
		rs[len(rs)-1] = m
	}
	r.runs[name] = rs
}

func (r *roundLog) median(name string, f func(secMeasure) float64) (float64, int) {
	var v []float64
	for _, m := range r.runs[name] {
		v = append(v, f(m))
	}
	if len(v) == 0 {
		return 0, 0
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], len(v)
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, len(v)
}

// summary is the markdown of bench/RESULTS.md's security section: medians of the rounds,
// with TLS/plaintext ratios for throughput and the extra cost over a plaintext connection
// for logins.
func (r *roundLog) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return ""
	}
	var b strings.Builder
	perOp := func(m secMeasure) float64 { return m.perOp }
	broker := func(m secMeasure) float64 { return m.brokerCPU }
	client := func(m secMeasure) float64 { return m.clientCPU }
	var thr, auth []string
	for _, n := range r.order {
		if strings.HasPrefix(n, "auth/") {
			auth = append(auth, n)
		} else {
			thr = append(thr, n)
		}
	}
	if len(thr) > 0 {
		b.WriteString("\n| workload | listener | rounds | records/s | MB/s | broker CPU s/M rec | SSL/PLAINTEXT rec/s | SSL/PLAINTEXT broker CPU |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, n := range thr {
			parts := strings.Split(n, "/") // op/size/listener
			sec, k := r.median(n, perOp)
			cpu, _ := r.median(n, broker)
			size := 100.0
			if parts[1] != "100B" {
				size = 10240
			}
			ratioR, ratioC := "", ""
			if parts[2] == "SSL" {
				base := parts[0] + "/" + parts[1] + "/PLAINTEXT"
				if bsec, bk := r.median(base, perOp); bk > 0 {
					ratioR = fmt.Sprintf("%.2f", bsec/sec)
					if bcpu, _ := r.median(base, broker); bcpu > 0 {
						ratioC = fmt.Sprintf("%.2f", cpu/bcpu)
					}
				}
			}
			fmt.Fprintf(&b, "| %s %s | %s | %d | %.0f | %.1f | %.2f | %s | %s |\n", parts[0], parts[1], parts[2], k,
				1/sec, size/sec/(1<<20), cpu*1e6, ratioR, ratioC)
		}
	}
	if len(auth) > 0 {
		base, bk := r.median("auth/PLAINTEXT", perOp)
		b.WriteString("\n| connection ready (dial → authenticated) | rounds | µs per connection | extra over PLAINTEXT µs | broker CPU µs | client CPU µs |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|\n")
		for _, n := range auth {
			sec, k := r.median(n, perOp)
			bc, _ := r.median(n, broker)
			cc, _ := r.median(n, client)
			extra := ""
			if bk > 0 && n != "auth/PLAINTEXT" {
				extra = fmt.Sprintf("%.0f", (sec-base)*1e6)
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %.0f | %.0f |\n", strings.TrimPrefix(n, "auth/"), k, sec*1e6, extra, bc*1e6, cc*1e6)
		}
	}
	return b.String()
}
