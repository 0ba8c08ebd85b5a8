package statechange

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestLogFileTailAndFilters(t *testing.T) {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	logger.SetLevel(logrus.DebugLevel)
	file := filepath.Join(t.TempDir(), "sub", "state-change.log")
	l1, err := Open(Options{File: file, Keep: 3, Broker: "1", Enabled: func(lv logrus.Level) bool { return lv <= logrus.InfoLevel }})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := Open(Options{Broker: "2"})
	if err != nil {
		t.Fatal(err)
	}
	l1.Attach(logger)
	l2.Attach(logger)
	b1 := logger.WithFields(logrus.Fields{"broker": int32(1), "component": Component})
	b1.WithFields(logrus.Fields{"topic": "a", "partition": 0}).Info("became leader")
	b1.WithFields(logrus.Fields{"topic": "b", "partition": 1}).Info("became follower")
	b1.WithField("topic", "a").Debug("below the logger's level")
	logger.WithFields(logrus.Fields{"broker": 1, "component": "controller"}).Info("another component")
	logger.WithFields(logrus.Fields{"broker": 2, "component": Component, "topic": "a"}).Info("broker 2's")
	b1.WithFields(logrus.Fields{"topic": "a", "partition": 2}).Warn("third")
	b1.WithFields(logrus.Fields{"topic": "c", "partition": 3}).Info("fourth")

	all := l1.Tail("", 0)
	if len(all) != 3 || all[0].Message != "became follower" || all[2].Message != "fourth" || all[2].Seq != 4 {
		t.Fatalf("tail keeping 3 = %+v", all)
	}
	if a := l1.Tail("a", 0); len(a) != 1 || a[0].Message != "third" || a[0].Partition == nil || *a[0].Partition != 2 || a[0].Level != "warning" {
		t.Errorf("topic a = %+v", a)
	}
	if last := l1.Tail("", 1); len(last) != 1 || last[0].Message != "fourth" {
		t.Errorf("limit 1 = %+v", last)
	}
	if got := strings.Join(l1.Topics(), ","); got != "a,b,c" {
		t.Errorf("topics = %s", got)
	}
	if t2 := l2.Tail("", 0); len(t2) != 1 || t2[0].Message != "broker 2's" {
		t.Errorf("broker 2's log = %+v", t2)
	}

	// Closing one Log detaches it; the other keeps receiving.
	if err := l1.Close(); err != nil {
		t.Fatal(err)
	}
	b1.WithField("topic", "a").Info("after close")
	logger.WithFields(logrus.Fields{"broker": 2, "component": Component}).Info("broker 2 again")
	if n := len(l1.Tail("", 0)); n != 3 {
		t.Errorf("closed log got entries: %d", n)
	}
	if n := len(l2.Tail("", 0)); n != 2 {
		t.Errorf("open log has %d entries, want 2", n)
	}
	for _, hs := range logger.Hooks {
		for _, h := range hs {
			if h == logrus.Hook(l1) {
				t.Fatal("closed log still hooked")
			}
		}
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `msg="became leader"`) || !strings.Contains(lines[0], "topic=a") ||
		!strings.Contains(lines[3], "msg=fourth") || lines[3] != all[2].Line {
		t.Errorf("file:\n%s", data)
	}
}

func TestOpenFailsOnDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(Options{File: dir}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open(directory) = %v, want an error naming it", err)
	}
}
