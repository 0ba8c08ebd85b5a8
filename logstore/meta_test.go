package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMetaPropertiesGolden(t *testing.T) {
	now := time.Date(2026, 12, 2, 14, 51, 9, 0, time.UTC)
	got := string(EncodeMetaProperties(MetaProperties{BrokerID: 1, ClusterID: "Y3oG2bpUQgyTXjIMq1dUOQ"}, now))
	want := "#\n#Wed Dec 02 14:51:09 UTC 2026\ncluster.id=Y3oG2bpUQgyTXjIMq1dUOQ\nversion=0\nbroker.id=1\n"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	dir := t.TempDir()
	// As Kafka's Properties.store might order it, with a ':' separator and blanks.
	os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte("#\n#date\nbroker.id = 3\nversion:0\ncluster.id=abc\n"), 0o644)
	m, found, err := ReadMetaProperties(OSFS{}, dir)
	if err != nil || !found || m.BrokerID != 3 || m.ClusterID != "abc" || m.Version != 0 {
		t.Fatalf("read %+v %v %v", m, found, err)
	}
}

func TestMetaMismatchRefuses(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	now := time.Now()
	if err := checkMetaProperties(OSFS{}, []string{d1, d2}, 1, "cluster-a", now); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{d1, d2} {
		if m, ok, err := ReadMetaProperties(OSFS{}, d); err != nil || !ok || m.BrokerID != 1 || m.ClusterID != "cluster-a" {
			t.Fatalf("written %+v %v %v", m, ok, err)
		}
	}
	err := checkMetaProperties(OSFS{}, []string{d1, d2}, 2, "cluster-a", now)
	if !errors.Is(err, ErrMetaMismatch) || !strings.Contains(err.Error(), "broker.id") || !strings.Contains(err.Error(), d1) {
		t.Fatalf("broker id mismatch: %v", err)
	}
	err = checkMetaProperties(OSFS{}, []string{d1, d2}, 1, "cluster-b", now)
	if !errors.Is(err, ErrMetaMismatch) || !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("cluster id mismatch: %v", err)
	}
	os.WriteFile(filepath.Join(d2, MetaPropertiesFile), []byte("version=1\nnode.id=1\ncluster.id=x\n"), 0o644)
	if err := checkMetaProperties(OSFS{}, []string{d1, d2}, 1, "cluster-a", now); !errors.Is(err, ErrMetaMismatch) {
		t.Fatalf("kraft v1 accepted: %v", err)
	}
	os.WriteFile(filepath.Join(d2, MetaPropertiesFile), EncodeMetaProperties(MetaProperties{BrokerID: 5}, now), 0o644)
	if _, _, err := ReadMetaBrokerID([]string{d1, d2}); !errors.Is(err, ErrMetaMismatch) {
		t.Fatalf("dirs disagree: %v", err)
	}
	os.Remove(filepath.Join(d2, MetaPropertiesFile))
	if id, ok, err := ReadMetaBrokerID([]string{d2, d1}); err != nil || !ok || id != 1 {
		t.Fatalf("ReadMetaBrokerID %d %v %v", id, ok, err)
	}
	if _, ok, err := ReadMetaBrokerID([]string{d2}); err != nil || ok {
		t.Fatalf("none: %v %v", ok, err)
	}
}

func TestDirLockExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := lockDir(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDir(OSFS{}, dir)
	if !errors.Is(err, ErrLogDirLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v", err)
	}
	if err := l.unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := lockDir(OSFS{}, dir)
	if err != nil {
		t.Fatalf("relock: %v", err)
	}
	l2.unlock()
}

func TestCleanShutdownMarker(t *testing.T) {
	dir := t.TempDir()
	if clean, err := takeCleanShutdownMarker(OSFS{}, dir); clean || err != nil {
		t.Fatalf("fresh dir clean=%v %v", clean, err)
	}
	if err := writeCleanShutdownMarker(OSFS{}, dir); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, CleanShutdownFile))
	if string(raw) != `{"version":0,"brokerEpoch":-1}` {
		t.Fatalf("marker %q", raw)
	}
	if clean, err := takeCleanShutdownMarker(OSFS{}, dir); !clean || err != nil {
		t.Fatalf("clean=%v %v", clean, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("marker not deleted at start")
	}
}
