package logstore

import (
	"path/filepath"
	"reflect"
	"testing"
)

// Ported in spirit from Kafka's LeaderEpochFileCacheTest.
func TestLeaderEpochCache(t *testing.T) {
	dir := t.TempDir()
	c, err := openLeaderEpochCache(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ep, off := c.EndOffsetFor(0, 10); ep != UndefinedEpoch || off != UndefinedEpochOffset {
		t.Fatalf("empty cache: %d %d", ep, off)
	}
	c.Assign(2, 6)
	c.Assign(2, 7) // later start for the same epoch: ignored
	c.Assign(3, 8)
	c.Assign(5, 11)
	want := []EpochEntry{{2, 6}, {3, 8}, {5, 11}}
	if got := c.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("entries %v", got)
	}
	for _, tc := range []struct {
		req     int32
		ep      int32
		endOff  int64
		comment string
	}{
		{5, 5, 20, "latest epoch: LEO"},
		{3, 3, 11, "start of the next epoch"},
		{4, 3, 11, "unknown epoch between: floor epoch, next start"},
		{1, 1, 6, "below the first epoch: requested epoch, first start"},
		{6, UndefinedEpoch, UndefinedEpochOffset, "above the latest"},
	} {
		if ep, off := c.EndOffsetFor(tc.req, 20); ep != tc.ep || off != tc.endOff {
			t.Errorf("%s: EndOffsetFor(%d) = %d %d", tc.comment, tc.req, ep, off)
		}
	}
	// Reload from the checkpoint file.
	c2, _ := openLeaderEpochCache(OSFS{}, dir)
	if !reflect.DeepEqual(c2.Entries(), want) {
		t.Fatalf("reloaded %v", c2.Entries())
	}
	// A lower epoch with a higher offset drops the contradicting entries.
	c.Assign(4, 9)
	if got := c.Entries(); !reflect.DeepEqual(got, []EpochEntry{{2, 6}, {3, 8}, {4, 9}}) {
		t.Fatalf("after non-monotonic assign %v", got)
	}
	c.TruncateFromEnd(9)
	if got := c.Entries(); !reflect.DeepEqual(got, []EpochEntry{{2, 6}, {3, 8}}) {
		t.Fatalf("after truncateFromEnd %v", got)
	}
	c.TruncateFromStart(7)
	if got := c.Entries(); !reflect.DeepEqual(got, []EpochEntry{{2, 7}, {3, 8}}) {
		t.Fatalf("after truncateFromStart %v", got)
	}
	if e := c.EpochForOffset(7); e != 2 {
		t.Fatalf("epoch for 7: %d", e)
	}
	if _, err := ReadLeaderEpochCheckpoint(OSFS{}, filepath.Join(dir, LeaderEpochCheckpointFile)); err != nil {
		t.Fatal(err)
	}
}
