package logstore

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files under testdata/")

// goldenLog writes a small deterministic log: fixed clock, fixed records, one gzip batch.
func goldenLog(t *testing.T) (string, *Log) {
	dir := filepath.Join(t.TempDir(), "golden-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"index.interval.bytes": "100"}})
	for i := 0; i < 4; i++ {
		codec := recordbatch.None
		if i == 2 {
			codec = recordbatch.Gzip
		}
		recs := []recordbatch.Record{
			{OffsetDelta: 0, Key: []byte("key"), Value: []byte("hello"), Headers: []recordbatch.RecordHeader{{Key: "h1", Value: []byte("v")}}},
			{OffsetDelta: 1, TimestampDelta: 5, Value: []byte("world")},
		}
		h := recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: 1, BaseTimestamp: 1_700_000_000_000 + int64(i),
			MaxTimestamp: 1_700_000_000_005 + int64(i), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		if i == 3 {
			h.ProducerID, h.ProducerEpoch, h.BaseSequence = 4000, 0, 10
		}
		b, err := recordbatch.Build(h, recs, codec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, 5); err != nil {
			t.Fatal(err)
		}
	}
	return dir, l
}

func TestDumpLogGolden(t *testing.T) {
	dir, l := goldenLog(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := []string{LogFileName(dir, 0), IndexFileName(dir, 0), TimeIndexFileName(dir, 0)}
	var out bytes.Buffer
	if err := DumpLog(&out, files, DumpOptions{PrintDataLog: true}); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "")
	checkGolden(t, "testdata/dumplog.golden", []byte(got))

	// The segment bytes themselves are pinned too: a change is a format change.
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", "golden-segment", filepath.Base(f)), data)
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *rewrite {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (run with -rewrite after checking):\n got: %q\nwant: %q", path, got, want)
	}
}
