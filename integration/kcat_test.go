package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKcat produces with kcat (librdkafka) -P -X acks=1 and reads back with kcat -C -e.
// kcat cannot tell us the offsets it was given, so the check is: every line comes back
// exactly once, offsets 0..n-1 per partition, each key's records in the order sent, the
// header intact and the timestamp within the produce window.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat (or run ./scripts/test.sh, which installs it)")
	}
	c := StartCluster(t, ClusterConfig{Brokers: 3})
	cases := []struct {
		name  string
		codec string
		n     int
	}{
		{"async", "none", asyncRecords},
		{"codec=none", "none", codecRecords},
		{"codec=gzip", "gzip", codecRecords},
		{"codec=snappy", "snappy", codecRecords},
		{"codec=lz4", "lz4", codecRecords},
		{"codec=zstd", "zstd", codecRecords},
	}
	failed := ""
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if failed != "" {
				// Each case would wait out the same timeouts: keep CI short, fail loudly.
				t.Fatalf("not run: %s failed first", failed)
			}
			defer func() {
				if t.Failed() {
					failed = tc.name
				}
			}()
			topic := "kcat-" + strings.ReplaceAll(tc.name, "=", "-")
			createTopic(t, c, topic, testPartitions, 1, nil)
			brokers := strings.Join(c.Bootstrap(), ",")

			var in bytes.Buffer
			for i := range tc.n {
				r := testRecord("kcat", i, time.Time{})
				fmt.Fprintf(&in, "%s\t%s\n", r.Key, r.Value)
			}
			start := time.Now().Add(-time.Second).Truncate(time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			prod := exec.CommandContext(ctx, kcat, "-b", brokers, "-P", "-t", topic, "-K", "\t",
				"-H", "client=kcat", "-X", "acks=1", "-X", "compression.codec="+tc.codec, "-X", "linger.ms=5")
			prod.Stdin = &in
			if out, err := prod.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			produced := time.Since(start) - time.Second
			end := time.Now().Add(time.Second)

			consStart := time.Now()
			consCtx, consCancel := context.WithTimeout(context.Background(), time.Minute)
			defer consCancel()
			cons := exec.CommandContext(consCtx, kcat, "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e",
				"-f", "%p\t%o\t%k\t%s\t%T\t%h\n")
			var stderr bytes.Buffer
			cons.Stderr = &stderr
			out, err := cons.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v (after %v, %d bytes of output)\n%s", err, time.Since(consStart).Round(time.Millisecond), len(out), lastBytes(stderr.Bytes(), 3000))
			}
			t.Logf("%d records: produced in %v, consumed in %v", tc.n, produced.Round(time.Millisecond), time.Since(consStart).Round(time.Millisecond))
			checkKcatOutput(t, out, tc.n, start, end)
		})
	}
}

func checkKcatOutput(t *testing.T, out []byte, n int, start, end time.Time) {
	t.Helper()
	seen := make([]bool, n)
	nextOffset := map[int64]int64{}
	lastSeq := map[string]int{}
	count, errs := 0, 0
	fail := func(format string, args ...any) {
		errs++
		if errs <= 10 {
			t.Errorf(format, args...)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 6 {
			fail("kcat line %q: want 6 fields", sc.Text())
			continue
		}
		count++
		p, _ := strconv.ParseInt(f[0], 10, 32)
		off, _ := strconv.ParseInt(f[1], 10, 64)
		key, value, hdrs := f[2], f[3], f[5]
		ts, _ := strconv.ParseInt(f[4], 10, 64)
		if off != nextOffset[p] {
			fail("partition %d: offset %d, want %d", p, off, nextOffset[p])
		}
		nextOffset[p] = off + 1
		seq, err := seqOf([]byte(value))
		if err != nil || seq < 0 || seq >= n {
			fail("partition %d offset %d: unexpected value %q", p, off, value)
			continue
		}
		if seen[seq] {
			fail("record %d consumed twice", seq)
		}
		seen[seq] = true
		want := testRecord("kcat", seq, time.Time{})
		if key != string(want.Key) {
			fail("partition %d offset %d: key %q, want %q", p, off, key, want.Key)
		}
		if prev, ok := lastSeq[key]; ok && seq < prev {
			fail("partition %d offset %d: key %s record %d after %d", p, off, key, seq, prev)
		}
		lastSeq[key] = seq
		if hdrs != "client=kcat" {
			fail("partition %d offset %d: headers %q, want client=kcat", p, off, hdrs)
		}
		if ts < start.UnixMilli() || ts > end.UnixMilli() {
			fail("partition %d offset %d: timestamp %d outside the produce window [%d, %d]", p, off, ts, start.UnixMilli(), end.UnixMilli())
		}
	}
	if count != n {
		missing := 0
		for _, ok := range seen {
			if !ok {
				missing++
			}
		}
		t.Errorf("kcat consumed %d records, produced %d (%d missing)", count, n, missing)
	}
	if errs > 10 {
		t.Errorf("... %d mismatches in all", errs)
	}
}

// lastBytes keeps the end of a long tool output for a failure message.
func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return append([]byte("..."), b[len(b)-n:]...)
	}
	return b
}
