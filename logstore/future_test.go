package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// copyTo appends the current log's batches from the future log's end to its end (what the
// broker's mover does), up to maxBytes a read.
func copyTo(t *testing.T, cur, fut *Log, upTo int64) {
	t.Helper()
	for fut.LogEndOffset() < upTo {
		ri, err := cur.Read(fut.LogEndOffset(), 1, cur.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		data, err := ri.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fut.AppendAsFollower(data); err != nil {
			t.Fatal(err)
		}
	}
}

// entriesOf lists the names in dir belonging to tp (current, future or deleted copies).
func entriesOf(t *testing.T, dir string, tp TopicPartition) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() == tp.String() || strings.HasPrefix(e.Name(), tp.String()+".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A future log is created in another dir, survives a restart half copied, replaces the
// current log once caught up (the old dir renamed -delete, then removed), and the move
// holds after another restart. A dir named for a partition not created yet is where it is
// created; deleting a partition deletes its future log too.
func TestFutureLogMove(t *testing.T) {
	clock := newFakeClock()
	dirA, dirB := t.TempDir(), t.TempDir()
	cfg := testManagerConfig(t, clock, dirA, dirB)
	m := openTestManager(t, cfg)
	tp := TopicPartition{Topic: "mv", Partition: 0}
	lc := logConfig(t, map[string]string{"segment.bytes": "200", "file.delete.delay.ms": "1000"})
	id := [16]byte{1, 2, 3}
	cur, err := m.GetOrCreateLog(tp, id, lc)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(cur.Dir()) != dirA {
		t.Fatalf("log created in %s, want %s", cur.Dir(), dirA)
	}
	for i := 0; i < 6; i++ {
		produce(t, cur, 1000+int64(i), "k", strings.Repeat("v", 40))
	}
	cur.UpdateHighWatermark(cur.LogEndOffset())
	want := readAll(t, cur)

	if _, err := m.IsLogDirOnline(filepath.Join(dirB, "x")); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("IsLogDirOnline of an unknown dir: %v, want ErrLogDirNotFound", err)
	}
	if _, _, err := m.CreateFutureLog(tp, id, lc, dirA); err == nil {
		t.Fatal("future log created in the current log's dir")
	}
	fut, created, err := m.CreateFutureLog(tp, id, lc, dirB)
	if err != nil || !created {
		t.Fatalf("CreateFutureLog: %v (created %v)", err, created)
	}
	if again, created, err := m.CreateFutureLog(tp, id, lc, dirB); err != nil || created || again != fut {
		t.Fatalf("second CreateFutureLog: %v created %v same %v", err, created, again == fut)
	}
	if name := filepath.Base(fut.Dir()); !regexp.MustCompile(`^mv-0\.[0-9a-f]{32}-future$`).MatchString(name) {
		t.Fatalf("future dir name %q", name)
	}
	copyTo(t, cur, fut, 3)
	if _, err := m.ReplaceCurrentWithFutureLog(tp); err == nil {
		t.Fatal("a future log behind the current one replaced it")
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Restart: the future log is back, half copied; the current log is untouched.
	m = openTestManager(t, cfg)
	cur, _ = m.GetLog(tp)
	fut, ok := m.GetFutureLog(tp)
	if !ok || fut.LogEndOffset() != 3 || filepath.Dir(fut.Dir()) != dirB {
		t.Fatalf("future log after restart: %v", ok)
	}
	if fl := m.FutureLogs(); len(fl) != 1 || fl[0] != fut {
		t.Fatalf("FutureLogs: %d", len(fl))
	}
	if len(m.AllLogs()) != 1 {
		t.Fatalf("AllLogs lists %d logs, want the current one only", len(m.AllLogs()))
	}
	copyTo(t, cur, fut, cur.LogEndOffset())
	nl, err := m.ReplaceCurrentWithFutureLog(tp)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.GetLog(tp); got != nl || nl.Dir() != filepath.Join(dirB, "mv-0") {
		t.Fatalf("log after the swap at %s", nl.Dir())
	}
	if _, ok := m.GetFutureLog(tp); ok {
		t.Fatal("future log still listed after the swap")
	}
	if nl.HighWatermark() != nl.LogEndOffset() {
		t.Fatalf("high watermark %d after the swap, want %d", nl.HighWatermark(), nl.LogEndOffset())
	}
	if got := readAll(t, nl); !slices.Equal(got, want) {
		t.Fatalf("moved log reads %v, want %v", got, want)
	}
	if got := entriesOf(t, dirA, tp); len(got) != 1 || !strings.HasSuffix(got[0], "-delete") {
		t.Fatalf("old dir holds %v, want one -delete dir", got)
	}
	clock.Advance(61 * time.Second) // file.delete.delay.ms: the broker default after the restart
	m.processDueDeletes()
	if got := entriesOf(t, dirA, tp); len(got) != 0 {
		t.Fatalf("old dir still holds %v", got)
	}
	produce(t, nl, 2000, "k", "after")
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}

	m = openTestManager(t, cfg)
	defer m.Shutdown()
	l, _ := m.GetLog(tp)
	if filepath.Dir(l.Dir()) != dirB || l.LogEndOffset() != int64(len(want)+1) {
		t.Fatalf("after restart: %s ends at %d", l.Dir(), l.LogEndOffset())
	}

	// A preferred dir wins over the emptier one.
	tp2 := TopicPartition{Topic: "later", Partition: 0}
	m.MaybeUpdatePreferredLogDir(tp2, dirB)
	l2, err := m.GetOrCreateLog(tp2, [16]byte{}, lc)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(l2.Dir()) != dirB {
		t.Fatalf("later-0 created in %s, want the preferred %s", l2.Dir(), dirB)
	}
	// Deleting the partition deletes its future log too.
	if _, _, err := m.CreateFutureLog(tp2, [16]byte{}, lc, dirA); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteLog(tp2); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.GetFutureLog(tp2); ok {
		t.Fatal("future log kept after DeleteLog")
	}
	for _, d := range []string{dirA, dirB} {
		for _, e := range entriesOf(t, d, tp2) {
			if !strings.HasSuffix(e, "-delete") {
				t.Fatalf("%s left in %s after DeleteLog", e, d)
			}
		}
	}
}

func TestTrimFutureDirSuffix(t *testing.T) {
	for in, want := range map[string]string{
		"a-0.0123456789abcdef0123456789abcdef-future": "a-0",
		"a.b-c-12.ff-future":                          "a.b-c-12",
		"a-0":                                         "a-0",
		"a-0-future":                                  "a-0-future",
		"a-0.-future":                                 "a-0.-future",
	} {
		if got := trimFutureDirSuffix(in); got != want {
			t.Errorf("trimFutureDirSuffix(%q) = %q, want %q", in, got, want)
		}
	}
	if FutureDirNameTooLong(TopicPartition{Topic: strings.Repeat("t", 200), Partition: 1}) {
		t.Error("a 200-byte topic is movable")
	}
	if !FutureDirNameTooLong(TopicPartition{Topic: strings.Repeat("t", 249), Partition: 1}) {
		t.Error("a 249-byte topic is not movable")
	}
}
