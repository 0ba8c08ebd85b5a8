package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
)

func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(nil, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: samsa") {
		t.Fatalf("no args: code %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := dispatch([]string{"nope"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "nope"`) {
		t.Fatalf("unknown: code %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := dispatch([]string{"--help"}, nil, &out, &errb); code != 0 {
		t.Fatalf("help: code %d", code)
	}
	for _, name := range []string{"broker", "topics", "console-producer", "console-consumer", "dump-log"} {
		if _, ok := commands[name]; !ok {
			t.Errorf("command %s missing", name)
		}
	}
}

func TestParseBrokerArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    brokerOpts
		wantErr string
	}{
		{"flag form", []string{"--config", "b.yaml", "--override", "broker.id=2", "--override", "log.dirs=/x"},
			brokerOpts{configPath: "b.yaml", overrides: []string{"broker.id=2", "log.dirs=/x"}}, ""},
		{"equals form", []string{"-config=b.yaml"}, brokerOpts{configPath: "b.yaml"}, ""},
		{"kafka-server-start form", []string{"server.properties", "--override", "a=b"},
			brokerOpts{configPath: "server.properties", overrides: []string{"a=b"}}, ""},
		{"missing config", []string{"--override", "a=b"}, brokerOpts{}, "config"},
		{"override without =", []string{"--config", "x", "--override", "ab"}, brokerOpts{}, "key=value"},
		{"stray argument", []string{"--config", "x", "y"}, brokerOpts{}, "unrecognized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := parseBrokerArgs(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v want %+v", got, tt.want)
			}
		})
	}
}

func TestRunBrokerBadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.yaml")
	os.WriteFile(p, []byte("zookeeper.connect: h:1\nnum.partitions: zero\nmin.insync.replicas: 0\n"), 0o644)
	var errb bytes.Buffer
	code := runBroker([]string{"--config", p}, nil, io.Discard, &errb)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"num.partitions", `"zero"`, "min.insync.replicas"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

func TestNewRootLogger(t *testing.T) {
	for _, tt := range []struct{ format, level, want string }{
		{"json", "debug", `"msg":"hello"`},
		{"text", "info", `msg=hello`},
	} {
		cfg, _, err := config.FromMap(map[string]string{"zookeeper.connect": "h:1", "samsa.log.format": tt.format, "samsa.log.level": tt.level})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		l, err := newRootLogger(cfg, &buf)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("hello")
		if !strings.Contains(buf.String(), tt.want) {
			t.Errorf("%s: %q lacks %q", tt.format, buf.String(), tt.want)
		}
		if l.GetLevel().String() != tt.level {
			t.Errorf("level %s want %s", l.GetLevel(), tt.level)
		}
	}
}

type fakeBroker struct {
	startErr  error
	started   atomic.Bool
	shutdowns atomic.Int32
	done      chan struct{}
	err       error
}

func (f *fakeBroker) Start(ctx context.Context) error { f.started.Store(true); return f.startErr }
func (f *fakeBroker) Shutdown()                       { f.shutdowns.Add(1) }
func (f *fakeBroker) Done() <-chan struct{}           { return f.done }
func (f *fakeBroker) Err() error                      { return f.err }

func withFakeBroker(t *testing.T, fb *fakeBroker) {
	old := newBroker
	newBroker = func(*config.Config, *logrus.Entry) (brokerRunner, error) { return fb, nil }
	t.Cleanup(func() { newBroker = old })
}

// testLog routes log lines to t.Log, so only failing tests print them.
func testLog(t *testing.T) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(tWriter{t})
	return logrus.NewEntry(l)
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestServeBroker(t *testing.T) {
	t.Run("signal shuts down cleanly", func(t *testing.T) {
		fb := &fakeBroker{done: make(chan struct{})}
		withFakeBroker(t, fb)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for !fb.started.Load() {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		if code := serveBroker(ctx, nil, testLog(t)); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if fb.shutdowns.Load() != 1 {
			t.Fatalf("shutdowns %d", fb.shutdowns.Load())
		}
	})
	t.Run("start failure", func(t *testing.T) {
		fb := &fakeBroker{done: make(chan struct{}), startErr: errors.New("zk down")}
		withFakeBroker(t, fb)
		if code := serveBroker(context.Background(), nil, testLog(t)); code != 1 {
			t.Fatalf("exit %d", code)
		}
	})
	t.Run("broker fails on its own", func(t *testing.T) {
		fb := &fakeBroker{done: make(chan struct{}), err: errors.New("all log dirs failed")}
		close(fb.done)
		withFakeBroker(t, fb)
		if code := serveBroker(context.Background(), nil, testLog(t)); code != 1 {
			t.Fatalf("exit %d", code)
		}
		if fb.shutdowns.Load() != 1 {
			t.Fatalf("shutdowns %d", fb.shutdowns.Load())
		}
	})
}

func TestParseDumpLogArgs(t *testing.T) {
	o, _, err := parseDumpLogArgs([]string{"--files", "a.log, b.index", "--print-data-log"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Files, []string{"a.log", "b.index"}) || !o.PrintDataLog || !o.DeepIteration || o.MaxMessageSize != 5*1024*1024 {
		t.Fatalf("%+v", o)
	}
	o, _, err = parseDumpLogArgs([]string{"--files=a.log", "--value-decoder-class", "kafka.serializer.StringDecoder", "--index-sanity-check", "--max-bytes", "100"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.PrintDataLog || !o.DeepIteration || !o.IndexSanityCheck || o.MaxBytes != 100 {
		t.Fatalf("decoder must imply print-data-log and deep iteration: %+v", o)
	}
	if _, _, err := parseDumpLogArgs([]string{"--files=a.log", "--cluster-metadata-decoder"}, io.Discard); err == nil {
		t.Fatal("--cluster-metadata-decoder (KRaft only) accepted")
	}
	if _, _, err := parseDumpLogArgs([]string{"--print-data-log"}, io.Discard); err == nil || !strings.Contains(err.Error(), "files") {
		t.Fatalf("missing --files: %v", err)
	}
}
