package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPerfTools: producer-perf-test then consumer-perf-test against a broker process, with
// the random group Kafka's tool makes and with --group, checking the lines Kafka's
// kafka-consumer-perf-test prints: its header and one line of ten values whose counts are
// what was produced, and whose rebalance and fetch times add up to the elapsed time. A
// second run on the committed group finds nothing and says so as Kafka does.
func TestPerfTools(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 1, Process: true})
	bs := c.Bootstrap()[0]
	const (
		topic   = "perf"
		records = 20000
		size    = 100
	)
	if out, err := samsaCmd(t, "", "topics", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1"); err != nil {
		t.Fatalf("topics --create: %v\n%s", err, out)
	}
	out, err := samsaStdout(t, "producer-perf-test", "--topic", topic, "--num-records", strconv.Itoa(records), "--record-size", strconv.Itoa(size),
		"--throughput", "-1", "--producer-props", "bootstrap.servers="+bs, "acks=-1")
	if err != nil {
		t.Fatalf("producer-perf-test: %v", err)
	}
	if !regexp.MustCompile(`(?m)^` + strconv.Itoa(records) + ` records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.$`).MatchString(out) {
		t.Errorf("producer-perf-test's last line is not Kafka's summary:\n%s", out)
	}

	const header = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	date := `(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3})`
	num := `(-?[\d.]+|Infinity|NaN)`
	line := regexp.MustCompile(`^` + date + `, ` + date + `, ` + num + `, ` + num + `, (\d+), ` + num + `, (\d+), (-?\d+), ` + num + `, ` + num + `$`)
	run := func(wantMsgs int, args ...string) {
		t.Helper()
		out, err := samsaStdout(t, append([]string{"consumer-perf-test", "--bootstrap-server", bs, "--topic", topic, "--messages", strconv.Itoa(records)}, args...)...)
		if err != nil {
			t.Fatalf("consumer-perf-test %v: %v", args, err)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if wantMsgs < records && len(lines) == 3 && strings.HasPrefix(lines[1], "WARNING: Exiting before consuming the expected number of messages") {
			lines = append(lines[:1], lines[2])
		}
		if len(lines) != 2 || lines[0] != header {
			t.Fatalf("consumer-perf-test %v printed:\n%s\nwant Kafka's header and one line of values", args, out)
		}
		m := line.FindStringSubmatch(lines[1])
		if m == nil {
			t.Fatalf("consumer-perf-test %v: values line %q is not Kafka's format", args, lines[1])
		}
		start, _ := time.Parse("2006-01-02 15:04:05.000", m[1][:19]+"."+m[1][20:])
		end, _ := time.Parse("2006-01-02 15:04:05.000", m[2][:19]+"."+m[2][20:])
		wantMB := fmt.Sprintf("%.4f", float64(wantMsgs*size)/(1<<20))
		if m[3] != wantMB || m[5] != strconv.Itoa(wantMsgs) {
			t.Errorf("consumer-perf-test %v: consumed %s MB in %s messages, want %s MB in %d", args, m[3], m[5], wantMB, wantMsgs)
		}
		rebalance, _ := strconv.ParseInt(m[7], 10, 64)
		fetch, _ := strconv.ParseInt(m[8], 10, 64)
		if elapsed := end.Sub(start).Milliseconds(); rebalance+fetch != elapsed || fetch < 0 {
			t.Errorf("consumer-perf-test %v: rebalance.time.ms %d + fetch.time.ms %d, want them >= 0 adding up to the elapsed %d ms", args, rebalance, fetch, elapsed)
		}
	}
	run(records)
	run(records, "--group", "perf-it")
	run(0, "--group", "perf-it", "--timeout", "2000") // offsets were committed: nothing left
}
