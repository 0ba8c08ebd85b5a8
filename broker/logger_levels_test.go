package broker

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was written since the last call.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

func newLevelTestLogger(level logrus.Level) (*logrus.Logger, *lockedBuffer) {
	buf := &lockedBuffer{}
	l := logrus.New()
	l.SetOutput(buf)
	l.SetLevel(level)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableColors: true})
	return l, buf
}

// logEach logs one entry per component at level and returns which got through.
func logEach(l *logrus.Logger, buf *lockedBuffer, level logrus.Level, components ...string) map[string]bool {
	buf.take()
	for _, c := range components {
		e := logrus.NewEntry(l)
		if c != "" {
			e = e.WithField("component", c)
		}
		e.Log(level, "probe from "+c+".")
	}
	out := buf.take()
	got := map[string]bool{}
	for _, c := range components {
		got[c] = strings.Contains(out, "probe from "+c+".")
	}
	return got
}

func wantThrough(t *testing.T, got map[string]bool, want map[string]bool) {
	t.Helper()
	for c, w := range want {
		if got[c] != w {
			t.Errorf("component %q logged=%v, want %v", c, got[c], w)
		}
	}
}

func TestLoggerLevelsFilterPerComponent(t *testing.T) {
	l, buf := newLevelTestLogger(logrus.InfoLevel)
	lv := levelsOf(l)
	if levelsOf(l) != lv {
		t.Fatal("second levelsOf built a second table")
	}
	comps := []string{"controller", "replica.manager", "state.change", "some.new.component", ""}

	wantThrough(t, logEach(l, buf, logrus.DebugLevel, comps...), map[string]bool{"controller": false, "replica.manager": false, "": false})
	wantThrough(t, logEach(l, buf, logrus.InfoLevel, comps...), map[string]bool{"controller": true, "replica.manager": true, "": true})

	// One logger at DEBUG: its component logs debug, the others do not.
	if !lv.SetLevel("kafka.controller.KafkaController", logrus.DebugLevel) {
		t.Fatal("SetLevel on an existing logger failed")
	}
	if l.GetLevel() != logrus.DebugLevel {
		t.Fatalf("logrus level %v, want debug (the most verbose logger)", l.GetLevel())
	}
	wantThrough(t, logEach(l, buf, logrus.DebugLevel, comps...), map[string]bool{"controller": true, "replica.manager": false,
		"state.change": false, "some.new.component": false, "": false})

	// The parent "kafka" at WARN: kafka.* loggers without their own level follow it (unmapped
	// components too); the controller keeps DEBUG; state.change.logger and root stay at INFO.
	lv.SetLevel("kafka", logrus.WarnLevel)
	wantThrough(t, logEach(l, buf, logrus.InfoLevel, comps...), map[string]bool{"controller": true, "replica.manager": false,
		"state.change": true, "some.new.component": false, "": true})
	got := lv.Loggers()
	if got["kafka.server.ReplicaManager"] != "WARN" || got["kafka.controller.KafkaController"] != "DEBUG" || got["root"] != "INFO" ||
		got["state.change.logger"] != "INFO" {
		t.Fatalf("loggers %v", got)
	}

	// Unset: back to inheriting; root at ERROR silences info everywhere but the controller.
	lv.UnsetLevel("kafka")
	lv.SetLevel("root", logrus.ErrorLevel)
	wantThrough(t, logEach(l, buf, logrus.InfoLevel, comps...), map[string]bool{"controller": true, "replica.manager": false,
		"state.change": false, "": false})
	lv.UnsetLevel("kafka.controller.KafkaController")
	if l.GetLevel() != logrus.ErrorLevel {
		t.Fatalf("logrus level %v after unsetting, want error", l.GetLevel())
	}
	wantThrough(t, logEach(l, buf, logrus.ErrorLevel, comps...), map[string]bool{"controller": true, "replica.manager": true, "": true})
	if lv.SetLevel("no.such.logger", logrus.InfoLevel) || lv.UnsetLevel("no.such.logger") {
		t.Fatal("unknown logger accepted")
	}
}

// denyAll refuses everything.
type denyAll struct{}

func (denyAll) Authorize(security.Principal, string, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return false
}
func (denyAll) AuthorizeByResourceType(security.Principal, string, kmsg.ACLOperation, kmsg.ACLResourceType) bool {
	return false
}

func loggerOp(name string, op int8, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOp(op), value
	return c
}

func loggerResource(name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBrokerLogger, name, ops
	return r
}

func TestAlterBrokerLoggersValidation(t *testing.T) {
	l, _ := newLevelTestLogger(logrus.InfoLevel)
	a := &APIs{BrokerID: 1, Log: logrus.NewEntry(l)}
	debug, info, lower, warn := strp("DEBUG"), strp("INFO"), strp("info"), strp("WARN")
	for _, tc := range []struct {
		name string
		res  kmsg.IncrementalAlterConfigsRequestResource
		code *kerr.Error
		msg  string
	}{
		{"duplicate keys", loggerResource("1", loggerOp("kafka", opSet, debug), loggerOp("kafka", opDelete, nil)),
			kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"null values", loggerResource("1", loggerOp("kafka", opSet, nil), loggerOp("root", opAppend, nil), loggerOp("kafka.log.LogCleaner", opDelete, nil)),
			kerr.InvalidRequest, "Null value not supported for : kafka, root"},
		{"not an id", loggerResource("x", loggerOp("kafka", opSet, debug)), kerr.InvalidRequest, "Node id must be an integer, but it is: x"},
		{"another broker", loggerResource("2", loggerOp("kafka", opSet, debug)), kerr.InvalidRequest, "Unexpected node id. Expected 1, but received 1"},
		{"unknown logger", loggerResource("1", loggerOp("kafka", opSet, debug), loggerOp("org.nope", opSet, info)),
			kerr.InvalidConfig, "Logger org.nope does not exist!"},
		{"unknown logger delete", loggerResource("1", loggerOp("org.nope", opDelete, nil)), kerr.InvalidConfig, "Logger org.nope does not exist!"},
		{"lower-case level", loggerResource("1", loggerOp("root", opSet, lower)), kerr.InvalidConfig,
			"Cannot set the log level of root to info as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{"delete root", loggerResource("1", loggerOp("root", opDelete, nil)), kerr.InvalidRequest, "Removing the log level of the root logger is not allowed"},
		{"append", loggerResource("1", loggerOp("kafka", opAppend, debug)), kerr.InvalidRequest, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{"subtract", loggerResource("1", loggerOp("kafka", opSubtract, debug)), kerr.InvalidRequest, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource"},
		{"unknown op", loggerResource("1", loggerOp("kafka", 7, debug)), kerr.InvalidRequest, "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource"},
	} {
		err := a.alterBrokerLoggers(nil, tc.res, false)
		code, msg := apiErrorParts(err)
		if code != tc.code.Code || msg == nil || *msg != tc.msg {
			got := "<nil>"
			if msg != nil {
				got = *msg
			}
			t.Errorf("%s: code %d %q, want %s %q", tc.name, code, got, tc.code.Message, tc.msg)
		}
	}
	// Nothing was applied by the refused requests (the first op of several was valid).
	if got := a.loggerLevels().Loggers(); got["kafka"] != "INFO" || got["root"] != "INFO" {
		t.Fatalf("a refused request changed levels: %v", got)
	}

	// validate_only checks and changes nothing.
	if err := a.alterBrokerLoggers(nil, loggerResource("1", loggerOp("kafka", opSet, debug)), true); err != nil {
		t.Fatal(err)
	}
	if got := a.loggerLevels().Loggers()["kafka"]; got != "INFO" {
		t.Fatalf("validate_only changed kafka to %s", got)
	}
	// SET and DELETE together; DELETE with a value is fine (the value is ignored).
	if err := a.alterBrokerLoggers(nil, loggerResource("1", loggerOp("kafka", opSet, debug), loggerOp("root", opSet, warn),
		loggerOp("kafka.log.LogCleaner", opDelete, info)), false); err != nil {
		t.Fatal(err)
	}
	if got := a.loggerLevels().Loggers(); got["kafka"] != "DEBUG" || got["kafka.log.LogCleaner"] != "DEBUG" || got["root"] != "WARN" ||
		got["state.change.logger"] != "WARN" {
		t.Fatalf("levels after SET %v", got)
	}

	// ALTER_CONFIGS on the cluster is required, checked after the request's shape.
	a.Authorizer = denyAll{}
	err := a.alterBrokerLoggers(nil, loggerResource("1", loggerOp("kafka", opSet, info)), false)
	if code, msg := apiErrorParts(err); code != kerr.ClusterAuthorizationFailed.Code || msg == nil || *msg != kerr.ClusterAuthorizationFailed.Message {
		t.Fatalf("unauthorized: %v", err)
	}
	err = a.alterBrokerLoggers(nil, loggerResource("1", loggerOp("kafka", opSet, nil)), false)
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("null value before authorization: %v", err)
	}
}

// The whole path: a broker, IncrementalAlterConfigs on BROKER_LOGGER over the wire, and the
// broker's log output follows the new level at once.
func TestBrokerLoggerLevelsLive(t *testing.T) {
	log, w := newTestLogger(t)
	log.Logger.SetLevel(logrus.InfoLevel)
	b, err := New(testBrokerConfig(t, testChroot(t), nil), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	tc := adminDial(t, b.Addr("PLAINTEXT"))

	accepted := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, l := range w.lines {
			if strings.Contains(l, "connection accepted") {
				n++
			}
		}
		return n
	}
	alter := func(ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{loggerResource("1", ops...)}
		resp := tc.request(req, 1).(*kmsg.IncrementalAlterConfigsResponse)
		if r := resp.Resources[0]; r.ErrorCode != 0 {
			t.Fatalf("alter BROKER_LOGGER: %d %v", r.ErrorCode, r.ErrorMessage)
		}
	}
	// serveConn logs "connection accepted" before serving the first request: once the
	// ApiVersions answer is back, the line is either written or filtered.
	dialOnce := func() {
		c := adminDial(t, b.Addr("PLAINTEXT"))
		c.request(kmsg.NewPtrApiVersionsRequest(), 0)
		c.c.Close()
	}

	before := accepted()
	dialOnce()
	if accepted() != before {
		t.Fatal("debug line logged at INFO")
	}
	alter(loggerOp("kafka.network.SocketServer", opSet, strp("DEBUG")))
	dialOnce()
	adminWaitFor(t, 5*time.Second, "the socket server's debug line", func() bool { return accepted() > before })

	describe := func() map[string]string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
		req.Resources = append(req.Resources, r)
		out := map[string]string{}
		for _, c := range tc.request(req, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
			out[c.Name] = *c.Value
		}
		return out
	}
	if got := describe(); got["kafka.network.SocketServer"] != "DEBUG" || got["kafka.server.ReplicaManager"] != "INFO" {
		t.Fatalf("described loggers %v", got)
	}

	// Back to inheriting INFO while another logger keeps logrus itself at DEBUG: the
	// per-logger filter alone must keep the socket server's debug lines out.
	alter(loggerOp("kafka.network.SocketServer", opDelete, nil), loggerOp("kafka.controller.KafkaController", opSet, strp("DEBUG")))
	if got := describe(); got["kafka.network.SocketServer"] != "INFO" || got["kafka.controller.KafkaController"] != "DEBUG" {
		t.Fatalf("after DELETE: %v", got)
	}
	if log.Logger.GetLevel() != logrus.DebugLevel {
		t.Fatalf("logrus level %v", log.Logger.GetLevel())
	}
	after := accepted()
	dialOnce()
	dialOnce()
	if accepted() != after {
		t.Fatal("debug lines still logged after DELETE")
	}
}

// Every component samsa logs under has a Kafka logger, so BROKER_LOGGER can reach it by
// name rather than only through the "kafka" parent.
func TestEveryLogComponentHasALogger(t *testing.T) {
	re := regexp.MustCompile(`"component"[,:]\s*"([^"]+)"`)
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			found++
			if _, ok := componentLoggers[string(m[1])]; !ok {
				t.Errorf("%s: component %q has no entry in componentLoggers", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found only %d component fields; is the walk reading the source tree?", found)
	}
}
