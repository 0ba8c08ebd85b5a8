package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumerPerfJavaNumbers: a run with no fetch time prints Java's Infinity/NaN, not Go's
// +Inf, and the rates use the printed millisecond times.
func TestConsumerPerfJavaNumbers(t *testing.T) {
	layout := javaDateLayout("yyyy-MM-dd HH:mm:ss:SSS")
	start := time.Date(2026, 12, 2, 15, 4, 5, 123e6, time.UTC)
	r := consumerPerfResult{Start: start, End: start.Add(time.Second), Bytes: 1 << 20, Messages: 10, JoinTime: time.Second}
	want := "2026-12-02 15:04:05:123, 2026-12-02 15:04:06:123, 1.0000, 1.0000, 10, 10.0000, 1000, 0, Infinity, Infinity"
	if got := formatConsumerPerf(r, layout); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	r = consumerPerfResult{Start: start, End: start, JoinTime: 0}
	want = "2026-12-02 15:04:05:123, 2026-12-02 15:04:05:123, 0.0000, NaN, 0, NaN, 0, 0, NaN, NaN"
	if got := formatConsumerPerf(r, layout); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := javaF4(-1.0 / 3); got != "-0.3333" {
		t.Errorf("javaF4(-1/3) = %q", got)
	}
}

// TestConsumerPerfClientOpts: --consumer.config settings reach the client, a bad number is
// Kafka's config error, and --include must match whole topic names (Java's Pattern).
func TestConsumerPerfClientOpts(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "consumer.properties")
	if err := os.WriteFile(cfg, []byte("client.id=mine\nfetch.max.wait.ms=50\nisolation.level=read_committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Port 1 on loopback: nothing listens, and the client is closed before it matters.
	o, _, err := parseConsumerPerfArgs([]string{"--bootstrap-server", "127.0.0.1:1", "--include", "perf.*", "--messages", "1", "--consumer.config", cfg}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := consumerPerfClientOpts(o, func() {})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValue(kgo.ClientID); got != "mine" {
		t.Errorf("client id %v, want the config file's", got)
	}
	if got := cl.OptValue(kgo.FetchMaxWait); got != 50*time.Millisecond {
		t.Errorf("fetch max wait %v, want 50ms", got)
	}
	if got, _ := cl.OptValue(kgo.ConsumeTopics).([]string); len(got) != 1 || got[0] != "^(?:perf.*)$" {
		t.Errorf("include regex %v, want it anchored", got)
	}
	if got := cl.OptValue(kgo.FetchIsolationLevel); got != int8(1) {
		t.Errorf("isolation level %v, want read_committed (1)", got)
	}

	o.props = map[string]string{"fetch.min.bytes": "x"}
	if _, err := consumerPerfClientOpts(o, func() {}); err == nil {
		t.Errorf("fetch.min.bytes=x accepted")
	}
}
