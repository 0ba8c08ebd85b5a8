package broker

// webview_controller_test.go: the controller page (event queue, state-change tail) and the
// state-change log file, on two real brokers with a leader change between them.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

func TestWebViewControllerEventQueueAndStateChangeLog(t *testing.T) {
	chroot := testChroot(t)
	file := filepath.Join(t.TempDir(), "logs", "state-change.log") // the directory is created
	b1 := startTestBroker(t, chroot, map[string]string{"samsa.http.listener": "127.0.0.1:0", "samsa.state.change.log.file": file})
	waitController(t, b1)
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2", "samsa.http.listener": "127.0.0.1:0"})
	adminWaitFor(t, 10*time.Second, "both brokers in the controller's cache", func() bool {
		return b1.Metadata().IsBrokerAlive(2) && b2.Metadata().ControllerID() == 1
	})
	tc := adminDial(t, b1.Addr("PLAINTEXT"))
	topic := adminTopic("wvc", -1, -1)
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{2, 1} // broker 2 leads first
	topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{ra}
	if resp := tc.request(adminCreateTopicsReq(15000, false, topic), 7).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %s", adminCodeName(resp.Topics[0].ErrorCode))
	}
	tp := logstore.TopicPartition{Topic: "wvc", Partition: 0}
	adminWaitFor(t, 10*time.Second, "broker 2 leading", func() bool {
		pm, ok := b2.Metadata().Partition(tp)
		return ok && pm.Leader == 2
	})

	// Broker 2's page: not the controller, and says which broker is.
	var d2 webControllerData
	code, body := webGet(t, "GET", "http://"+b2.HTTPAddr()+"/controller?format=json")
	if err := json.Unmarshal([]byte(body), &d2); err != nil || code != 200 {
		t.Fatalf("broker 2 controller json: %d %v\n%s", code, err, body)
	}
	if d2.EventQueue.Active || d2.ControllerID != 1 || d2.BrokerID != 2 || d2.StateChangeFile != "" {
		t.Errorf("broker 2 controller json = %+v", d2)
	}
	if code, body = webGet(t, "GET", "http://"+b2.HTTPAddr()+"/controller"); code != 200 ||
		!strings.Contains(body, "is not the active controller") || !strings.Contains(body, `<b id="controller-id">1</b>`) {
		t.Errorf("broker 2 controller page: %d\n%s", code, body)
	}

	// The leader change: broker 2's controlled shutdown moves the leadership to broker 1.
	b2.Shutdown()
	if pm, ok := b1.Metadata().Partition(tp); !ok || pm.Leader != 1 {
		t.Fatalf("after broker 2's controlled shutdown the leader is %+v, want 1", pm)
	}

	base := "http://" + b1.HTTPAddr()
	var d webControllerData
	// The controller's election to broker 1, and broker 1's become-leader once its
	// LeaderAndIsr arrived.
	hasEntries := func(d webControllerData) (elected, became bool) {
		for _, e := range d.StateChanges {
			elected = elected || (e.Message == "partition state changed" && e.Fields["leader"] == "1")
			became = became || e.Message == "became leader"
		}
		return elected, became
	}
	adminWaitFor(t, 10*time.Second, "the election and broker 1's become-leader in its tail", func() bool {
		d = webControllerData{}
		code, body = webGet(t, "GET", base+"/controller?format=json&topic=wvc")
		if err := json.Unmarshal([]byte(body), &d); err != nil || code != 200 {
			t.Fatalf("controller json: %d %v\n%s", code, err, body)
		}
		elected, became := hasEntries(d)
		return elected && became
	})
	q := d.EventQueue
	if !q.Active || q.Epoch < 1 || q.BrokerID != 1 || d.StateChangeFile != file || d.Topic != "wvc" || q.Processed == 0 {
		t.Errorf("controller json = %+v", d)
	}
	seen := map[string]bool{}
	for _, e := range q.Recent {
		seen[e.Name] = true
		if e.Started.Before(e.Enqueued) || e.Finished.Before(e.Started) || e.QueueTimeMs < 0 || e.ProcessTimeMs < 0 || e.Epoch != q.Epoch {
			t.Errorf("processed event with inconsistent times: %+v", e)
		}
		if e.Name == "ControlledShutdown" && (e.State != "ControlledShutdown" || e.Arg != "broker 2") {
			t.Errorf("ControlledShutdown event = %+v", e)
		}
	}
	for _, name := range []string{"Startup", "BrokerChange", "ControlledShutdown"} {
		if !seen[name] {
			t.Errorf("no %s among the processed events: %+v", name, q.Recent)
		}
	}
	for _, e := range d.StateChanges {
		if e.Topic != "wvc" || e.Partition == nil || *e.Partition != 0 {
			t.Errorf("topic filter let through %+v", e)
		}
		if e.Fields["broker"] != "1" {
			t.Errorf("broker 2's entry in broker 1's log: %+v", e)
		}
	}
	if len(d.StateChanges) < 2 || d.StateChanges[0].Seq < d.StateChanges[len(d.StateChanges)-1].Seq { // newest first
		t.Errorf("state changes of wvc (newest first) = %+v", d.StateChanges)
	}

	// The file has the same lines, in order.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := string(data)
	for i := len(d.StateChanges) - 1; i >= 0; i-- {
		line := d.StateChanges[i].Line
		j := strings.Index(lines, line+"\n")
		if j < 0 {
			t.Fatalf("state-change log file lacks %q:\n%s", line, data)
		}
		lines = lines[j+len(line):]
	}
	if strings.Contains(string(data), "broker=2") || strings.Contains(string(data), "component=replica.manager") {
		t.Errorf("state-change log file has other entries:\n%s", data)
	}

	code, body = webGet(t, "GET", base+"/controller")
	if code != 200 || !strings.Contains(body, "is the active controller") || !strings.Contains(body, "ControlledShutdown") ||
		!strings.Contains(body, "state.change.logger") || !strings.Contains(body, file) || !strings.Contains(body, `<a href="/controller?topic=wvc">wvc</a>`) {
		t.Errorf("controller page: %d\n%s", code, body)
	}
	var none webControllerData
	if code, body = webGet(t, "GET", base+"/controller?format=json&topic=other"); code != 200 || json.Unmarshal([]byte(body), &none) != nil || len(none.StateChanges) != 0 {
		t.Errorf("topic=other: %d\n%s", code, body)
	}
	var one webControllerData
	if code, body = webGet(t, "GET", base+"/controller?format=json&limit=1"); code != 200 || json.Unmarshal([]byte(body), &one) != nil || len(one.StateChanges) != 1 {
		t.Errorf("limit=1: %d\n%s", code, body)
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/controller?topic=..%2Fetc", 400},
		{"GET", "/controller?topic=a%00b", 400},
		{"GET", "/controller?limit=0", 400},
		{"GET", "/controller?limit=x", 400},
		{"GET", "/controller?limit=99999999999999999999", 400},
		{"POST", "/controller", 405},
	} {
		if code, body := webGet(t, c.method, base+c.path); code != c.want {
			t.Errorf("%s %s = %d, want %d\n%s", c.method, c.path, code, c.want, body)
		}
	}
}

func TestStateChangeLogFileSetting(t *testing.T) {
	base := map[string]string{"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": t.TempDir()}
	for _, v := range []string{"/var/log/samsa/", "logs/.", "a/..", "a\x00b"} {
		raw := map[string]string{"samsa.state.change.log.file": v}
		for k, x := range base {
			raw[k] = x
		}
		if _, _, err := config.FromMap(raw); err == nil || !strings.Contains(err.Error(), "samsa.state.change.log.file") {
			t.Errorf("samsa.state.change.log.file=%q: err = %v, want an error naming the setting", v, err)
		}
	}

	// A path the broker cannot open (an existing directory) fails start-up, naming the setting.
	dir := t.TempDir()
	b, err := New(testBrokerConfig(t, testChroot(t), map[string]string{"samsa.state.change.log.file": dir}), adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = b.Start(ctx)
	if err == nil {
		b.Shutdown()
		t.Fatal("start-up with samsa.state.change.log.file naming a directory succeeded")
	}
	if !strings.Contains(err.Error(), "samsa.state.change.log.file") || !strings.Contains(err.Error(), dir) {
		t.Errorf("start-up error = %v, want one naming the setting and the path", err)
	}
}
