package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestOffsetCheckpointGolden(t *testing.T) {
	offsets := map[TopicPartition]int64{
		{"orders", 1}:              98,
		{"orders", 0}:              1234,
		{"__consumer_offsets", 17}: 5,
	}
	want := "0\n3\n__consumer_offsets 17 5\norders 0 1234\norders 1 98\n"
	if got := string(EncodeOffsetCheckpoint(offsets)); got != want {
		t.Fatalf("encode:\n%q\nwant\n%q", got, want)
	}
	if got := string(EncodeOffsetCheckpoint(nil)); got != "0\n0\n" {
		t.Fatalf("empty: %q", got)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, RecoveryPointCheckpointFile)
	if err := WriteOffsetCheckpoint(OSFS{}, path, offsets); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if string(raw) != want {
		t.Fatalf("file bytes %q", raw)
	}
	got, err := ReadOffsetCheckpoint(OSFS{}, path)
	if err != nil || !reflect.DeepEqual(got, offsets) {
		t.Fatalf("read back %v %v", got, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("tmp file left behind: %v", err)
	}
}

func TestOffsetCheckpointRead(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body string
		want       map[TopicPartition]int64
		errSub     string
	}{
		{"empty file", "", map[TopicPartition]int64{}, ""},
		{"header only", "0\n0\n", map[TopicPartition]int64{}, ""},
		{"kafka written", "0\n1\nmy.topic-x 3 42\n", map[TopicPartition]int64{{"my.topic-x", 3}: 42}, ""},
		{"extra spaces", "0\n1\nt  3   42\n", map[TopicPartition]int64{{"t", 3}: 42}, ""},
		{"bad version", "1\n0\n", nil, "unrecognised version 1"},
		{"count mismatch", "0\n2\nt 0 1\n", nil, "expected 2 entries, found 1"},
		{"malformed", "0\n1\nt 0\n", nil, "malformed line"},
		{"bad offset", "0\n1\nt 0 x\n", nil, "malformed line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadOffsetCheckpoint(OSFS{}, path)
			if c.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), c.errSub) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err %v, want %q naming the file", err, c.errSub)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v %v want %v", got, err, c.want)
			}
		})
	}
	got, err := ReadOffsetCheckpoint(OSFS{}, filepath.Join(dir, "missing"))
	if err != nil || len(got) != 0 {
		t.Fatalf("missing: %v %v", got, err)
	}
}

func TestLeaderEpochCheckpointGolden(t *testing.T) {
	entries := []EpochEntry{{0, 0}, {3, 1500}}
	want := "0\n2\n0 0\n3 1500\n"
	if got := string(EncodeLeaderEpochCheckpoint(entries)); got != want {
		t.Fatalf("got %q", got)
	}
	path := filepath.Join(t.TempDir(), LeaderEpochCheckpointFile)
	if err := WriteLeaderEpochCheckpoint(OSFS{}, path, entries); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLeaderEpochCheckpoint(OSFS{}, path)
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("read %v %v", got, err)
	}
}

func TestPartitionMetadataGolden(t *testing.T) {
	// Kafka's Uuid.toString of these bytes (base64url, no padding).
	id := [16]byte{0xb0, 0xae, 0x27, 0x62, 0xa6, 0x7c, 0x46, 0x3d, 0xa4, 0xf0, 0xa0, 0xb4, 0xb9, 0x5b, 0xfa, 0x84}
	want := "version: 0\ntopic_id: sK4nYqZ8Rj2k8KC0uVv6hA"
	if got := string(EncodePartitionMetadata(id)); got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	dir := t.TempDir()
	if _, found, err := ReadPartitionMetadata(OSFS{}, dir); found || err != nil {
		t.Fatalf("missing: %v %v", found, err)
	}
	if err := WritePartitionMetadata(OSFS{}, dir, id); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	if string(raw) != want {
		t.Fatalf("file %q", raw)
	}
	got, found, err := ReadPartitionMetadata(OSFS{}, dir)
	if err != nil || !found || got != id {
		t.Fatalf("read %x %v %v", got, found, err)
	}
	os.WriteFile(filepath.Join(dir, PartitionMetadataFile), []byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA"), 0o644)
	if _, _, err := ReadPartitionMetadata(OSFS{}, dir); err == nil {
		t.Fatal("zero topic id accepted")
	}
}

// TestWriteFileAtomicOrder pins the durable-replace order Kafka uses: tmp written, fsynced
// and closed before the rename, and the directory fsynced after it.
func TestWriteFileAtomicOrder(t *testing.T) {
	dir := t.TempDir()
	rfs := &recordingFS{root: dir}
	if err := WriteOffsetCheckpoint(rfs, filepath.Join(dir, "replication-offset-checkpoint"), map[TopicPartition]int64{{"t", 0}: 7}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"open replication-offset-checkpoint.tmp",
		"write replication-offset-checkpoint.tmp 10",
		"sync replication-offset-checkpoint.tmp",
		"close replication-offset-checkpoint.tmp",
		"rename replication-offset-checkpoint.tmp replication-offset-checkpoint",
		"syncdir .",
	}
	if got := rfs.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A failed fsync of the tmp file must leave the old checkpoint in place.
func TestWriteFileAtomicFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	if err := WriteOffsetCheckpoint(OSFS{}, path, map[TopicPartition]int64{{"t", 0}: 1}); err != nil {
		t.Fatal(err)
	}
	efs := newErrorFS()
	efs.arm("cp.tmp", false, true)
	err := WriteOffsetCheckpoint(efs, path, map[TopicPartition]int64{{"t", 0}: 2})
	if !errors.Is(err, errInjected) {
		t.Fatalf("err %v", err)
	}
	got, err := ReadOffsetCheckpoint(OSFS{}, path)
	if err != nil || got[TopicPartition{"t", 0}] != 1 {
		t.Fatalf("old checkpoint lost: %v %v", got, err)
	}
}
