package integration

// webview_controller_test.go: the /controller page and the state-change log files of three
// `samsa broker` processes, across a partition leader's crash.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// webControllerPage is the part of /controller?format=json the test reads.
type webControllerPage struct {
	BrokerID      int32  `json:"broker_id"`
	ControllerID  int32  `json:"controller_id"`
	ControllerURL string `json:"controller_url"`
	EventQueue    struct {
		Active bool  `json:"active"`
		Epoch  int32 `json:"controller_epoch"`
		Recent []struct {
			Name          string    `json:"name"`
			State         string    `json:"state"`
			Enqueued      time.Time `json:"enqueued"`
			Started       time.Time `json:"started"`
			Finished      time.Time `json:"finished"`
			QueueTimeMs   float64   `json:"queue_time_ms"`
			ProcessTimeMs float64   `json:"process_time_ms"`
		} `json:"recent"`
	} `json:"event_queue"`
	File         string `json:"state_change_log_file"`
	StateChanges []struct {
		Message string            `json:"message"`
		Topic   string            `json:"topic"`
		Fields  map[string]string `json:"fields"`
		Line    string            `json:"line"`
	} `json:"state_changes"`
}

func getControllerPage(addr, query string) (webControllerPage, error) {
	var p webControllerPage
	resp, err := http.Get("http://" + addr + "/controller?format=json&" + query)
	if err != nil {
		return p, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return p, err
	}
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("/controller: %s: %s", resp.Status, body)
	}
	return p, json.Unmarshal(body, &p)
}

// TestWebViewControllerStateChangeLog: a partition's leader crashes; the controller's page
// shows the BrokerChange it processed (with its times) and the election in its state-change
// tail, the new leader's page its "became leader", both files have the same lines, and a
// third broker's page links to the controller's.
func TestWebViewControllerStateChangeLog(t *testing.T) {
	httpAddrs := map[int32]string{}
	files := map[int32]string{}
	brokerProps := map[int32]map[string]string{}
	for id := range int32(3) {
		httpAddrs[id] = freeFixedAddr(t)
		files[id] = filepath.Join(t.TempDir(), "state-change.log")
		brokerProps[id] = map[string]string{"samsa.http.listener": httpAddrs[id], "samsa.state.change.log.file": files[id]}
	}
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, BrokerProps: brokerProps,
		Props: map[string]string{"zookeeper.session.timeout.ms": "4000"}})
	ctl := c.WaitController(10 * time.Second)
	others := replOthers(c, ctl)
	victim, third := others[0], others[1]
	const topic = "wv-ctl"
	c.writeTopicZnode(t, topic, map[int32][]int32{0: {victim, ctl, third}})
	waitFor(t, 20*time.Second, func() error {
		st, _, err := c.partitionState(topic, 0)
		if err == nil && (st.Leader != victim || len(st.ISR) != 3) {
			err = fmt.Errorf("state %+v, want leader %d and a full ISR", st, victim)
		}
		return err
	})

	c.Broker(victim).Kill()
	t.Logf("killed leader %d; controller %d", victim, ctl)
	var elected string
	var page webControllerPage
	waitFor(t, 30*time.Second, func() error {
		p, err := getControllerPage(httpAddrs[ctl], "topic="+topic)
		if err != nil {
			return err
		}
		for _, e := range p.StateChanges {
			if e.Message == "partition state changed" && e.Fields["to"] == "OnlinePartition" &&
				e.Fields["leader"] != fmt.Sprint(victim) && e.Fields["leader"] != "-1" {
				elected, page = e.Fields["leader"], p
				return nil
			}
		}
		return fmt.Errorf("no election away from broker %d in the controller's tail: %+v", victim, p.StateChanges)
	})
	q := page.EventQueue
	if !q.Active || q.Epoch < 1 || page.File != files[ctl] {
		t.Errorf("controller page: %+v", page)
	}
	var brokerChange bool
	for _, e := range q.Recent {
		if e.Name == "BrokerChange" {
			brokerChange = e.State == "BrokerChange" && !e.Enqueued.IsZero() && !e.Started.Before(e.Enqueued) &&
				!e.Finished.Before(e.Started) && e.QueueTimeMs >= 0 && e.ProcessTimeMs > 0
			break // the newest
		}
	}
	if !brokerChange {
		t.Errorf("no BrokerChange with its times among the controller's processed events: %+v", q.Recent)
	}
	checkStateChangeFile(t, files[ctl], page)

	var leaderPage webControllerPage
	waitFor(t, 10*time.Second, func() error {
		var leader int32
		fmt.Sscan(elected, &leader)
		p, err := getControllerPage(httpAddrs[leader], "topic="+topic)
		if err != nil {
			return err
		}
		for _, e := range p.StateChanges {
			if e.Message == "became leader" {
				leaderPage = p
				return nil
			}
		}
		return fmt.Errorf("broker %s has no \"became leader\" for %s: %+v", elected, topic, p.StateChanges)
	})
	checkStateChangeFile(t, leaderPage.File, leaderPage)

	p, err := getControllerPage(httpAddrs[third], "")
	if err != nil {
		t.Fatal(err)
	}
	if third != ctl && (p.EventQueue.Active || p.ControllerID != ctl || p.ControllerURL != "http://"+httpAddrs[ctl]+"/controller") {
		t.Errorf("broker %d's page: controller %d, link %q, active %v; want %d at http://%s/controller",
			third, p.ControllerID, p.ControllerURL, p.EventQueue.Active, ctl, httpAddrs[ctl])
	}
}

// checkStateChangeFile: every entry of the page is a line of the file.
func checkStateChangeFile(t *testing.T, file string, p webControllerPage) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		lines[l] = true
	}
	for _, e := range p.StateChanges {
		if !lines[e.Line] {
			t.Errorf("%s lacks the line %q", file, e.Line)
		}
	}
	if len(p.StateChanges) == 0 {
		t.Errorf("broker %d: no state-change entries", p.BrokerID)
	}
}
