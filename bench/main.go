// Command bench runs the same client workloads against samsa and against franz-go's
// in-memory kfake cluster, alternating them, for N rounds, and prints one table: records/s,
// MB/s, broker CPU seconds per million records (from /proc/<pid>/stat of the broker
// processes), p50/p99 latency, the median and best of the rounds, and samsa/kfake ratios.
// It also measures loopback TCP and raw file-write bandwidth in the same run.
//
//	go run ./bench -rounds 3            (or bench/run.sh)
//
// Each round starts a fresh samsa broker (new ZooKeeper chroot, new log dir) and a fresh
// kfake process, so kfake's memory stays bounded. ZooKeeper (Debian's zookeeper package,
// via internal/zktest) is shared by the whole run; its CPU is not counted.
//
// It is a program, not a test: `go test ./...` never runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-kafka/samsa/internal/zktest"
)

// workload is one row of the table.
type workload struct {
	name     string
	kind     string // "produce-kgo", "produce-sarama", "consume-kgo", "e2e"
	size     int
	parts    int32
	allAcks  bool
	records  int64
	rf3      bool   // runs on the 3-broker samsa cluster (RF=3) instead of the pair
	needsRep bool   // needs follower replication (acks=all with RF=3)
	consumes string // for consume rows: the produce row whose topic it reads
	codec    string // kgo producer compression: "" (none) or "snappy"
	txnSize  int64  // produce-kgo-txn: records per transaction
	// readCommitted: a consume row reads with isolation level read_committed.
	readCommitted bool
}

type options struct {
	rounds        int
	small, large  int64
	e2eRate       int
	e2eDur        time.Duration
	rf3           bool
	replication   bool
	txn           bool
	only          *regexp.Regexp
	samsaBin      string
	kfakeBin      string
	out           string
	straceConsume bool
	keep          bool
	// osBuffers adds the target samsa-osbuf: samsa with socket.send.buffer.bytes,
	// socket.receive.buffer.bytes and replica.socket.receive.buffer.bytes at -1 (the OS
	// defaults, auto-tuned on Linux) beside samsa with Kafka's defaults.
	osBuffers bool
	prof      *profiler
}

func main() {
	var o options
	var only string
	flag.IntVar(&o.rounds, "rounds", 3, "rounds (each runs every workload against samsa and kfake, alternating)")
	flag.Int64Var(&o.small, "small-records", 200000, "records per 100-byte workload")
	flag.Int64Var(&o.large, "large-records", 10000, "records per 10 KiB workload")
	flag.IntVar(&o.e2eRate, "e2e-rate", 10000, "records/s for the end-to-end latency workload")
	flag.DurationVar(&o.e2eDur, "e2e-duration", 3*time.Second, "length of the end-to-end latency workload")
	flag.BoolVar(&o.rf3, "rf3", true, "also run a 3-broker samsa cluster with replication factor 3")
	flag.BoolVar(&o.replication, "replication", false, "run RF=3 acks=all rows (needs follower fetching in samsa)")
	flag.BoolVar(&o.txn, "txn", true, "also run the transaction rows: idempotent against transactional produce (1,000 and 10,000 records per transaction), read_uncommitted against read_committed consume")
	flag.StringVar(&only, "only", "", "regexp: run only workloads whose name matches")
	flag.StringVar(&o.samsaBin, "samsa", "", "samsa binary (default: go build ./cmd/samsa)")
	flag.StringVar(&o.kfakeBin, "kfakeserver", "", "kfakeserver binary (default: go build ./bench/kfakeserver)")
	flag.StringVar(&o.out, "out", "", "also write the markdown table to this file")
	flag.BoolVar(&o.straceConsume, "strace", false, "after the rounds, strace a samsa broker during a 10 KiB consume and report which syscalls carried the bytes")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp folder (broker logs) after the run")
	flag.BoolVar(&o.osBuffers, "os-socket-buffers", false, "also run samsa with the socket buffer settings at -1 (OS defaults) as target samsa-osbuf, in the same rounds")
	profDir := flag.String("profile", "", "write CPU profiles of the clients and of samsa's brokers for every workload of round 1 into this folder")
	profSecs := flag.Int("profile-seconds", 3, "length of the broker profiles (size workloads to last at least this long)")
	flag.Parse()
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(2)
		}
		o.prof = &profiler{dir: *profDir, seconds: *profSecs}
	}
	if only != "" {
		o.only = regexp.MustCompile(only)
	}
	if o.rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: -rounds must be >= 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func workloads(o options) []workload {
	var ws []workload
	for _, size := range []int{100, 10240} {
		n := o.small
		if size > 100 {
			n = o.large
		}
		for _, parts := range []int32{1, 6} {
			for _, all := range []bool{false, true} {
				for _, client := range []string{"kgo", "sarama"} {
					ws = append(ws, workload{name: fmt.Sprintf("produce %s %s %dp acks=%s", client, sizeName(size), parts, acksName(all)),
						kind: "produce-" + client, size: size, parts: parts, allAcks: all, records: n})
				}
			}
			ws = append(ws, workload{name: fmt.Sprintf("consume kgo %s %dp", sizeName(size), parts), kind: "consume-kgo",
				size: size, parts: parts, records: n, consumes: fmt.Sprintf("produce kgo %s %dp acks=1", sizeName(size), parts)})
			if size == 100 && parts == 1 {
				// The same with kgo's default snappy batches: the client's decompression then
				// dominates a consume, which shows how much of it the broker can still move.
				ws = append(ws, workload{name: "produce kgo 100B 1p acks=1 snappy", kind: "produce-kgo", size: size, parts: parts,
					records: n, codec: "snappy"},
					workload{name: "consume kgo 100B 1p snappy", kind: "consume-kgo", size: size, parts: parts, records: n,
						consumes: "produce kgo 100B 1p acks=1 snappy"})
			}
		}
	}
	for _, all := range []bool{false, true} {
		ws = append(ws, workload{name: fmt.Sprintf("e2e kgo 100B 1p acks=%s @%d/s", acksName(all), o.e2eRate), kind: "e2e",
			size: 100, parts: 1, allAcks: all, records: int64(o.e2eRate) * int64(o.e2eDur/time.Second)})
	}
	if o.rf3 {
		for _, all := range []bool{false, true} {
			ws = append(ws, workload{name: fmt.Sprintf("RF3 produce kgo 100B 1p acks=%s", acksName(all)), kind: "produce-kgo",
				size: 100, parts: 1, allAcks: all, records: o.small, rf3: true, needsRep: all})
		}
		ws = append(ws, workload{name: fmt.Sprintf("RF3 e2e kgo 100B 1p acks=all @%d/s", o.e2eRate), kind: "e2e", size: 100, parts: 1,
			allAcks: true, records: int64(o.e2eRate) * int64(o.e2eDur/time.Second), rf3: true, needsRep: true})
	}
	if o.txn {
		ws = append(ws, txnWorkloads(o)...)
	}
	if o.only != nil {
		var keep []workload
		for _, w := range ws {
			if o.only.MatchString(w.name) {
				keep = append(keep, w)
			}
		}
		ws = keep
	}
	return ws
}

func sizeName(size int) string {
	if size >= 1024 {
		return fmt.Sprintf("%dKiB", size/1024)
	}
	return fmt.Sprintf("%dB", size)
}

func acksName(all bool) string {
	if all {
		return "all"
	}
	return "1"
}

// results[workload][target] holds one result per round.
type results map[string]map[string][]result

func (r results) add(w, t string, res result) {
	if r[w] == nil {
		r[w] = map[string][]result{}
	}
	r[w][t] = append(r[w][t], res)
}

func run(ctx context.Context, o options, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "samsa-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "bench: files under %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if o.samsaBin == "" {
		if o.samsaBin, err = goBuild(dir, "samsa", "./cmd/samsa"); err != nil {
			return err
		}
	}
	if o.kfakeBin == "" {
		if o.kfakeBin, err = goBuild(dir, "kfakeserver", "./bench/kfakeserver"); err != nil {
			return err
		}
	}
	zk, err := zktest.StartProcess(filepath.Join(dir, "zookeeper"))
	if err != nil {
		return err
	}
	defer zk.Stop()

	ws := workloads(o)
	res := results{}
	var baselines []map[string]result
	started := time.Now()
	for round := 1; round <= o.rounds; round++ {
		// Alternate which broker goes first, so neither always gets the cooler machine.
		order := []string{"samsa", "kfake"}
		if round%2 == 0 {
			order = []string{"kfake", "samsa"}
		}
		if o.osBuffers {
			order = append(order, "samsa-osbuf")
			if round%2 == 0 {
				order = []string{"samsa-osbuf", "kfake", "samsa"}
			}
		}
		for _, tname := range order {
			if err := runTarget(ctx, o, dir, zk, tname, round, ws, res); err != nil {
				return err
			}
		}
		if o.rf3 && hasRF3(ws) {
			if err := runTarget(ctx, o, dir, zk, "samsa-3", round, ws, res); err != nil {
				return err
			}
		}
		b, err := measureBaselines(dir)
		if err != nil {
			return err
		}
		baselines = append(baselines, b)
		fmt.Fprintf(os.Stderr, "bench: round %d done (%v)\n", round, time.Since(started).Round(time.Second))
	}
	table := renderTable(o, ws, res, baselines)
	fmt.Fprint(stdout, table)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if o.straceConsume {
		report, err := straceConsume(ctx, o, dir, zk)
		if err != nil {
			return fmt.Errorf("strace: %w", err)
		}
		fmt.Fprint(stdout, report)
	}
	return nil
}

func hasRF3(ws []workload) bool {
	for _, w := range ws {
		if w.rf3 {
			return true
		}
	}
	return false
}

func goBuild(dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s (run from the module root): %w", pkg, err)
	}
	return out, nil
}

func startTarget(ctx context.Context, o options, dir string, zk *zktest.Server, tname string, round int) (*target, error) {
	switch tname {
	case "kfake":
		return startKfake(ctx, o.kfakeBin, dir, fmt.Sprintf("kfake-r%d", round), 1)
	case "samsa":
		return startSamsa(ctx, o.samsaBin, dir, fmt.Sprintf("samsa-r%d", round), zk.Connect(fmt.Sprintf("bench-r%d-1", round)), 1, "")
	case "samsa-osbuf":
		return startSamsa(ctx, o.samsaBin, dir, fmt.Sprintf("samsaos-r%d", round), zk.Connect(fmt.Sprintf("bench-r%d-os", round)), 1,
			"socket.send.buffer.bytes: -1\nsocket.receive.buffer.bytes: -1\nreplica.socket.receive.buffer.bytes: -1\n")
	case "samsa-3":
		return startSamsa(ctx, o.samsaBin, dir, fmt.Sprintf("samsa3-r%d", round), zk.Connect(fmt.Sprintf("bench-r%d-3", round)), 3, "")
	}
	return nil, fmt.Errorf("unknown target %s", tname)
}

func runTarget(ctx context.Context, o options, dir string, zk *zktest.Server, tname string, round int, ws []workload, res results) error {
	rf3 := tname == "samsa-3"
	var todo []workload
	for _, w := range ws {
		if w.rf3 != rf3 {
			continue
		}
		if w.needsRep && !o.replication {
			res.add(w.name, tname, result{na: "n/a: replication not implemented"})
			continue
		}
		todo = append(todo, w)
	}
	if len(todo) == 0 {
		return nil
	}
	t, err := startTarget(ctx, o, dir, zk, tname, round)
	if err != nil {
		return err
	}
	defer func() {
		t.stop()
		if !o.keep { // bound the disk a run needs: drop this round's logs
			for _, d := range t.dirs {
				os.RemoveAll(d)
			}
		}
	}()
	rf := int16(1)
	if rf3 {
		rf = 3
	}
	topics := map[string]string{} // workload name -> topic
	for i, w := range todo {
		if err := ctx.Err(); err != nil {
			return err
		}
		topic := topics[w.consumes]
		if !strings.HasPrefix(w.kind, "consume-") {
			topic = fmt.Sprintf("bench-r%d-%d-%s", round, i, strings.NewReplacer(" ", "-", "=", "", "@", "", "/", "").Replace(w.name))
			if err := createTopic(ctx, t.bootstrap, topic, w.parts, rf); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			topics[w.name] = topic
		}
		if topic == "" {
			res.add(w.name, tname, result{na: "n/a: its produce row did not run"})
			continue
		}
		// Start each workload with no dirty pages left by the one before: the kernel's
		// writeback of a previous produce run would otherwise stall this one's appends.
		syscall.Sync()
		runtime.GC()
		var endProfile func()
		if o.prof != nil && round == 1 {
			if endProfile, err = o.prof.start(ctx, tname, w.name, t.debug); err != nil {
				return err
			}
		}
		cpu0 := t.cpuSeconds()
		var r result
		switch w.kind {
		case "produce-kgo":
			r, err = produceKgo(ctx, t.bootstrap, topic, w.records, w.size, w.allAcks, w.codec)
		case "produce-sarama":
			r, err = produceSarama(ctx, t.bootstrap, topic, w.records, w.size, w.allAcks)
		case "consume-kgo":
			r, err = consumeKgoIsolation(ctx, t.bootstrap, topic, w.parts, w.records, w.readCommitted)
		case "produce-kgo-idem":
			r, err = produceKgoIdempotent(ctx, t.bootstrap, topic, w.records, w.size)
		case "produce-kgo-txn":
			r, err = produceKgoTxn(ctx, t.bootstrap, topic, w.records, w.size, w.txnSize, fmt.Sprintf("bench-%s-r%d-%d", tname, round, i))
		case "e2e":
			r, err = endToEnd(ctx, t.bootstrap, topic, o.e2eRate, o.e2eDur, w.allAcks)
		}
		if endProfile != nil {
			endProfile()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: round %d %s %s: %v\n", round, tname, w.name, err)
			res.add(w.name, tname, result{na: "failed: " + firstLine(err.Error())})
			continue
		}
		r.cpu = t.cpuSeconds() - cpu0
		res.add(w.name, tname, r)
		fmt.Fprintf(os.Stderr, "bench: r%d %-7s %-38s %10.0f rec/s %8.2f MB/s cpu %6.2f s/M p50 %s p99 %s%s\n",
			round, tname, w.name, r.recsPerSec(), r.mbPerSec(), r.cpuPerM(), ms(r.p50), ms(r.p99), r.note)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func measureBaselines(dir string) (map[string]result, error) {
	tcp, err := loopbackTCP(2 << 30)
	if err != nil {
		return nil, fmt.Errorf("loopback tcp: %w", err)
	}
	noSync, withSync, err := fileWrite(dir, 512<<20)
	if err != nil {
		return nil, fmt.Errorf("file write: %w", err)
	}
	return map[string]result{"loopback TCP (1 stream, 1 MiB writes)": tcp,
		"file write 512 MiB, no fsync": noSync, "file write 512 MiB + fsync": withSync}, nil
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

// stat reduces the rounds of one cell: median and best (highest throughput, lowest CPU and
// latency). ok is false when no round measured anything.
type stat struct {
	n                       int
	recs, mb, cpu, p50, p99 [2]float64 // median, best
	na                      string
}

func reduce(rs []result) stat {
	var s stat
	var recs, mb, cpu, p50, p99 []float64
	for _, r := range rs {
		if r.na != "" {
			s.na = r.na
			continue
		}
		recs = append(recs, r.recsPerSec())
		mb = append(mb, r.mbPerSec())
		cpu = append(cpu, r.cpuPerM())
		p50 = append(p50, float64(r.p50)/1e6)
		p99 = append(p99, float64(r.p99)/1e6)
	}
	s.n = len(recs)
	if s.n == 0 {
		return s
	}
	s.recs = [2]float64{median(recs), maxf(recs)}
	s.mb = [2]float64{median(mb), maxf(mb)}
	s.cpu = [2]float64{median(cpu), minf(cpu)}
	s.p50 = [2]float64{median(p50), minf(p50)}
	s.p99 = [2]float64{median(p99), minf(p99)}
	return s
}

func median(v []float64) float64 {
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func maxf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func minf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func renderTable(o options, ws []workload, res results, baselines []map[string]result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Rounds: %d. Cells are median (best) of the rounds; best = highest rate, lowest CPU and latency.\n", o.rounds)
	fmt.Fprintf(&b, "CPU = broker process user+sys seconds per million records (/proc/<pid>/stat). Latency: produce rows send→ack per record; e2e rows produce→consume.\n\n")
	b.WriteString("| workload | broker | records/s | MB/s | CPU s/M rec | p50 ms | p99 ms | samsa/kfake rec/s | samsa/kfake CPU |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	f := func(v [2]float64, prec int) string {
		return fmt.Sprintf("%.*f (%.*f)", prec, v[0], prec, v[1])
	}
	for _, w := range ws {
		cells := res[w.name]
		names := []string{"samsa", "kfake"}
		if o.osBuffers {
			names = append(names, "samsa-osbuf")
		}
		if w.rf3 {
			names = []string{"samsa-3"}
		}
		k := reduce(cells["kfake"])
		for _, tn := range names {
			s := reduce(cells[tn])
			if s.n == 0 {
				na := s.na
				if na == "" {
					na = "not run"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | | | | | | |\n", w.name, tn, na)
				continue
			}
			lat50, lat99 := "-", "-"
			if s.p50[0] > 0 {
				lat50, lat99 = f(s.p50, 2), f(s.p99, 2)
			}
			ratioR, ratioC := "", ""
			if (tn == "samsa" || tn == "samsa-osbuf") && k.n > 0 {
				ratioR = fmt.Sprintf("%.2f", s.recs[0]/k.recs[0])
				if k.cpu[0] > 0 {
					ratioC = fmt.Sprintf("%.2f", s.cpu[0]/k.cpu[0])
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w.name, tn,
				f(s.recs, 0), f(s.mb, 1), f(s.cpu, 2), lat50, lat99, ratioR, ratioC)
		}
	}
	b.WriteString(renderTxnRatios(ws, res))
	b.WriteString("\n| baseline | MB/s median (best) |\n|---|---:|\n")
	var names []string
	for n := range baselines[0] {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var rs []result
		for _, bl := range baselines {
			rs = append(rs, bl[n])
		}
		s := reduce(rs)
		fmt.Fprintf(&b, "| %s | %.0f (%.0f) |\n", n, s.mb[0], s.mb[1])
	}
	return b.String()
}
