package logstore

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// BenchmarkOpen10kPartitions measures LogManager start over 10,000 partitions of one small
// segment each, after a clean shutdown and after an unclean one. Each open runs in a fresh
// child process (this test binary re-executed), so the reported RSS is the broker's, not
// the setup's. Goal after a clean shutdown: <= 5 s and <= 150 MB.
//
//	go test ./logstore -run '^$' -bench Open10k -benchtime 1x
func BenchmarkOpen10kPartitions(b *testing.B) {
	partitions := 10000
	if n, err := strconv.Atoi(os.Getenv("SAMSA_BENCH_PARTITIONS")); err == nil && n > 0 {
		partitions = n
	}
	dir := b.TempDir()
	setupStart := time.Now()
	runOpenChild(b, dir, "setup", partitions)
	b.Logf("setup of %d partitions took %v", partitions, time.Since(setupStart))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The clean child leaves the dir without a clean-shutdown marker (it crashes), so
		// the next open is unclean; the unclean child shuts down cleanly for the next round.
		base := runOpenChild(b, dir, "baseline", partitions)
		b.ReportMetric(base.OpenMs, "baseline_ms")
		b.Logf("baseline (list each partition dir, open+stat its .log): %.0f ms", base.OpenMs)
		for _, mode := range []string{"clean", "unclean"} {
			res := runOpenChild(b, dir, mode, partitions)
			if res.Logs != partitions {
				b.Fatalf("%s open loaded %d logs", mode, res.Logs)
			}
			b.ReportMetric(res.OpenMs/base.OpenMs, mode+"/baseline")
			b.ReportMetric(res.OpenMs, mode+"_open_ms")
			b.ReportMetric(res.RSSMB, mode+"_rss_MB")
			b.ReportMetric(res.PeakMB, mode+"_peak_rss_MB")
			b.Logf("%s shutdown: open %.0f ms, RSS %.1f MB (peak %.1f MB), heap %.1f MB", mode, res.OpenMs, res.RSSMB, res.PeakMB, res.HeapMB)
		}
	}
}

type openChildResult struct {
	Logs                          int
	OpenMs, RSSMB, PeakMB, HeapMB float64
}

func runOpenChild(b *testing.B, dir, mode string, partitions int) openChildResult {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenManagerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SAMSA_OPEN_CHILD_DIR="+dir, "SAMSA_OPEN_CHILD_MODE="+mode,
		"SAMSA_BENCH_PARTITIONS="+strconv.Itoa(partitions))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if j, ok := strings.CutPrefix(line, "OPENRESULT "); ok {
			var r openChildResult
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
	}
	b.Fatalf("child %s printed no result:\n%s", mode, out)
	return openChildResult{}
}

// TestOpenManagerChild is the child half of BenchmarkOpen10kPartitions; it does nothing
// unless run by it.
func TestOpenManagerChild(t *testing.T) {
	dir := os.Getenv("SAMSA_OPEN_CHILD_DIR")
	if dir == "" {
		return
	}
	log := logrus.New()
	log.SetOutput(ioDiscard{})
	if os.Getenv("SAMSA_OPEN_CHILD_MODE") == "baseline" {
		start := time.Now()
		n := openBaseline(t, dir)
		fmt.Printf("OPENRESULT {\"Logs\":%d,\"OpenMs\":%f}\n", n, float64(time.Since(start).Microseconds())/1000)
		return
	}
	if os.Getenv("SAMSA_OPEN_CHILD_MODE") == "setup" {
		n, _ := strconv.Atoi(os.Getenv("SAMSA_BENCH_PARTITIONS"))
		setupPartitions(t, dir, n)
		fmt.Printf("OPENRESULT {\"Logs\":%d}\n", n)
		return
	}
	threads := 1 // num.recovery.threads.per.data.dir, Kafka's default
	if n, err := strconv.Atoi(os.Getenv("SAMSA_BENCH_THREADS")); err == nil && n > 0 {
		threads = n
	}
	start := time.Now()
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1, Log: logrus.NewEntry(log), RecoveryThreadsPerDir: threads})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	rss, peak := procStatusMB("VmRSS"), procStatusMB("VmHWM")
	var heap float64
	{
		var ms runtimeMemStats
		heap = ms.heapMB()
	}
	res := openChildResult{Logs: len(m.AllLogs()), OpenMs: float64(elapsed.Microseconds()) / 1000, RSSMB: rss, PeakMB: peak, HeapMB: heap}
	j, _ := json.Marshal(res)
	fmt.Printf("OPENRESULT %s\n", j)
	if os.Getenv("SAMSA_OPEN_CHILD_MODE") == "clean" {
		m.crash()
	} else if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// procStatusMB reads a kB field of /proc/self/status in MB.
func procStatusMB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return -1
}

type runtimeMemStats struct{ runtime.MemStats }

func (m *runtimeMemStats) heapMB() float64 {
	runtime.ReadMemStats(&m.MemStats)
	return float64(m.HeapInuse) / (1 << 20)
}

// setupPartitions creates n partitions with one small batch each, as after a clean
// shutdown: one is written through the Manager, the rest are file copies of it, and the
// root checkpoints list them all (fsyncing 10,000 creations would take minutes here).
func setupPartitions(t testing.TB, dir string, n int) {
	log := logrus.New()
	log.SetOutput(ioDiscard{})
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1, Log: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	first := TopicPartition{"topic0", 0}
	l, err := m.GetOrCreateLog(first, [16]byte{1}, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	produce(t, l, time.Now().UnixMilli(), "key", strings.Repeat("v", 100), "key2", strings.Repeat("w", 100))
	l.UpdateHighWatermark(l.LogEndOffset())
	leo := l.LogEndOffset()
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, first.String())
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	offsets := map[TopicPartition]int64{first: leo}
	for p := 1; p < n; p++ {
		tp := TopicPartition{fmt.Sprintf("topic%d", p%100), int32(p / 100)}
		pd := filepath.Join(dir, tp.String())
		if err := os.Mkdir(pd, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(pd, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		offsets[tp] = leo
	}
	for _, name := range []string{RecoveryPointCheckpointFile, HighWatermarkCheckpointFile} {
		if err := WriteOffsetCheckpoint(OSFS{}, filepath.Join(dir, name), offsets); err != nil {
			t.Fatal(err)
		}
	}
}

// openBaseline is the least any loader does per partition: list its dir and open and
// stat its .log (kept open, as a loaded log keeps it).
func openBaseline(t testing.TB, dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		pd := filepath.Join(dir, e.Name())
		names, err := os.ReadDir(pd)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n.Name(), LogFileSuffix) {
				f, err := os.OpenFile(filepath.Join(pd, n.Name()), os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Stat(); err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		f.Close()
	}
	return len(files)
}
