package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rvTestBatch encodes a record batch header with the given base offset, record count and CRC
// field (the tool compares the stored CRC, it does not recompute it).
func rvTestBatch(base int64, n int32, crc int32) []byte {
	b := kmsg.RecordBatch{FirstOffset: base, Magic: 2, CRC: crc, LastOffsetDelta: n - 1, NumRecords: n, Records: []byte{0}}
	raw := b.AppendTo(nil)
	// AppendTo leaves Length as given; set it to the bytes after the length field.
	l := len(raw) - 12
	raw[8], raw[9], raw[10], raw[11] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
	return raw
}

func TestReplicaBufferVerify(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.Local)
	p0, p1 := rvTP{"t", 0}, rvTP{"t", 1}
	newBuf := func() *replicaBuffer {
		return &replicaBuffer{fetchOffset: map[rvTP]int64{p0: 0, p1: 0}, fetched: map[rvTP]map[int32]rvFetched{p0: {}, p1: {}},
			reportInterval: 0, lastReport: at.Add(-time.Second), now: func() time.Time { return at }}
	}
	var lines []string
	printLine := func(s string) { lines = append(lines, s) }

	// Both replicas agree on p0 up to the HW (5); the batch at 5..6 is past it. p1 lags on one replica.
	rb := newBuf()
	same := append(rvTestBatch(0, 3, 11), append(rvTestBatch(3, 2, 22), rvTestBatch(5, 2, 33)...)...)
	rb.fetched[p0][0] = rvFetched{hw: 5, records: same}
	rb.fetched[p0][1] = rvFetched{hw: 5, records: same[:len(same)-5]} // a cut trailing batch is skipped
	rb.fetched[p1][0] = rvFetched{hw: 4, records: rvTestBatch(0, 4, 44)}
	rb.fetched[p1][1] = rvFetched{hw: 0}
	if !rb.verify(printLine) {
		t.Fatal("agreeing replicas reported as mismatched")
	}
	if rb.fetchOffset[p0] != 5 || rb.fetchOffset[p1] != 0 {
		t.Fatalf("fetch offsets %v", rb.fetchOffset)
	}
	want := "2024-05-06 07:08:09,123: max lag is 4 for partition t-1 at offset 0 among 2 partitions"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("report %q, want %q", lines, want)
	}

	// A checksum mismatch is reported and verification goes on.
	lines = nil
	rb = newBuf()
	rb.fetched[p0][0] = rvFetched{hw: 3, records: rvTestBatch(0, 3, 11)}
	rb.fetched[p0][2] = rvFetched{hw: 3, records: rvTestBatch(0, 3, -1)}
	if !rb.verify(printLine) || rb.fetchOffset[p0] != 3 {
		t.Fatalf("checksum mismatch stopped verification: %v", rb.fetchOffset)
	}
	if want := "2024-05-06 07:08:09,123: partition t-0 has unmatched checksum at offset 2; replica 0's checksum 11; replica 2's checksum 4294967295"; lines[0] != want {
		t.Fatalf("got %q, want %q", lines[0], want)
	}
	// An offset mismatch ends the tool.
	lines = nil
	rb = newBuf()
	rb.fetched[p0][0] = rvFetched{hw: 9, records: rvTestBatch(0, 3, 11)}
	rb.fetched[p0][1] = rvFetched{hw: 9, records: rvTestBatch(0, 4, 11)}
	if rb.verify(printLine) {
		t.Fatal("offset mismatch not fatal")
	}
	if want := "2024-05-06 07:08:09,123: partition t-0: replica 0's offset 2 doesn't match replica 1's offset 3"; len(lines) != 1 || lines[0] != want {
		t.Fatalf("got %q, want %q", lines, want)
	}
}

func TestReplicaVerificationArgs(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "Validate that all replicas for a set of topics have the same data."},
		{[]string{"--fetch-size", "10"}, `Missing required argument "[broker-list]"`},
		{[]string{"--broker-list", "h:1", "--topics-include", "a", "--topic-white-list", "b"}, `Option "[topics-include]" can't be used with option "[topic-white-list]"`},
		{[]string{"--broker-list", "nohost"}, "Please provide valid host:port like host1:9091,host2:9092"},
	} {
		var errb bytes.Buffer
		if code := dispatch(append([]string{"replica-verification"}, tt.args...), nil, &bytes.Buffer{}, &errb); code != 1 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errb.String())
		}
	}
	re, err := includeListRegex(` "rv-a, rv-b" `)
	if err != nil || !re.MatchString("rv-a") || !re.MatchString("rv-b") || re.MatchString("xrv-a") {
		t.Fatalf("include list: %v %v", re, err)
	}
}

// Two brokers holding both replicas of each partition agree; the tool reports no lag at the
// high watermark, and "No topics found" when the filter matches nothing.
func TestReplicaVerificationEndToEnd(t *testing.T) {
	t.Parallel()
	addrs, _ := startTxnBrokers(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 2, nil, "rv"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: "rv", Partition: int32(i % 2), Value: []byte("value")})
	}
	for _, r := range recs { // one batch per record, so the replicas are compared many times
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	bs := strings.Join(addrs, ",")
	var errb bytes.Buffer
	if code := dispatch([]string{"replica-verification", "--broker-list", bs, "--topics-include", "nothing-.*"}, nil, &bytes.Buffer{}, &errb); code != 1 ||
		!strings.Contains(errb.String(), "No topics found.") {
		t.Fatalf("empty filter: exit %d, %q", code, errb.String())
	}

	done := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: max lag is 0 for partition rv-0 at offset 15 among 2 partitions$`)
	w := newLineWatch(func(s string) bool { return done.MatchString(s) })
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	o, _, err := parseReplicaVerificationArgs([]string{"--broker-list", bs, "--topic-white-list", "rv", "--time", "-2",
		"--report-interval-ms", "0", "--max-wait-ms", "100", "--fetch-size", "200"}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	code := make(chan int)
	go func() { code <- replicaVerification(runCtx, o, w, &errb) }()
	select {
	case <-w.hit:
	case <-ctx.Done():
		t.Fatalf("no converged report:\n%s\n%s", w.String(), errb.String())
	}
	stop()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d", c)
	}
	out := w.String()
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: verification process is started\n`).MatchString(out) ||
		strings.Contains(out, "unmatched") || strings.Contains(out, "doesn't match") {
		t.Fatalf("output:\n%s", out)
	}
	// With a 200-byte fetch size the tool needed several rounds: it reported lag before.
	if !regexp.MustCompile(`max lag is [1-9]\d* for partition rv-\d at offset \d+ among 2 partitions`).MatchString(out) {
		t.Fatalf("no lagging report before convergence:\n%s", out)
	}
}
