package logstore

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// kafka-dump-log prints .snapshot files too (DumpLogSegments.dumpProducerIdSnapshot).
func TestDumpLogPrintsProducerSnapshot(t *testing.T) {
	clock := newStepClock(1_700_000_000_000)
	c, _ := NewLogConfig(nil, nil)
	l, err := OpenLog(filepath.Join(t.TempDir(), "snap-0"), LogOpenOptions{Config: c, Clock: clock.Now, Log: logT(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppendIdem(t, l, 7, 1, 0, 3, clock.Now().UnixMilli())
	if err := l.TakeProducerSnapshot(); err != nil {
		t.Fatal(err)
	}
	path := ProducerSnapshotFileName(l.Dir(), l.LogEndOffset())
	var out bytes.Buffer
	if err := DumpLog(&out, []string{path}, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "Dumping "+path+"\nproducerId: 7 producerEpoch: 1 ") ||
		!strings.Contains(got, "firstSequence: 0 lastSequence: 2 lastOffset: 2") {
		t.Fatalf("got %q", got)
	}
}
