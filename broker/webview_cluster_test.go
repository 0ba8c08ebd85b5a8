package broker

// webview_cluster_test.go: the cluster, partition and segment pages of the internals view,
// served by a real broker's samsa.http.listener, and their answers to bad input.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/logstore"
)

func webGet(t *testing.T, method, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestWebViewClusterPages(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	createTopicKadm(t, addr, "wv", 2)
	produceConsume(t, kgoClient(t, addr), "wv", 4)
	base := "http://" + b.HTTPAddr()
	id := strconv.Itoa(int(b.ID()))

	code, body := webGet(t, "GET", base+"/")
	if code != 200 || !strings.Contains(body, "This broker: <b>"+id+"</b>") || !strings.Contains(body, "Controller: <b>"+id+"</b>") ||
		!strings.Contains(body, "PLAINTEXT://") || !strings.Contains(body, "/controller") {
		t.Errorf("cluster page: %d\n%s", code, body)
	}
	var cd webClusterData
	code, body = webGet(t, "GET", base+"/?format=json")
	if err := json.Unmarshal([]byte(body), &cd); err != nil || code != 200 {
		t.Fatalf("cluster json: %d %v\n%s", code, err, body)
	}
	if cd.BrokerID != b.ID() || cd.ControllerID != b.ID() || len(cd.Brokers) != 1 || !cd.ZKConnected || cd.ControllerEpoch < 1 || !cd.ActiveHere {
		t.Errorf("cluster json = %+v", cd)
	}

	var parts []webPartition
	code, body = webGet(t, "GET", base+"/partitions?format=json")
	if err := json.Unmarshal([]byte(body), &parts); err != nil || code != 200 {
		t.Fatalf("partitions json: %d %v\n%s", code, err, body)
	}
	var leo int64
	seen := 0
	for _, p := range parts {
		if p.Topic != "wv" {
			continue
		}
		seen++
		if !p.Hosted || !p.IsLeader || p.Leader != b.ID() || p.LogEndOffset != p.HighWatermark {
			t.Errorf("partition %+v", p)
		}
		leo += p.LogEndOffset
	}
	if seen != 2 || leo != 4 {
		t.Errorf("wv: %d partitions with LEOs summing to %d, want 2 and 4", seen, leo)
	}
	code, body = webGet(t, "GET", base+"/partitions")
	if code != 200 || !strings.Contains(body, "<td>wv</td>") || !strings.Contains(body, "/segments?topic=wv&amp;partition=1") {
		t.Errorf("partitions page: %d\n%s", code, body)
	}

	var sd webSegmentsData
	code, body = webGet(t, "GET", base+"/segments?topic=wv&partition=0&format=json")
	if err := json.Unmarshal([]byte(body), &sd); err != nil || code != 200 {
		t.Fatalf("segments json: %d %v\n%s", code, err, body)
	}
	if len(sd.Segments) != 1 || !sd.Segments[0].Active || sd.Segments[0].BaseOffset != 0 ||
		sd.Segments[0].NextOffset != sd.LogEndOffset || sd.Segments[0].File != "00000000000000000000.log" ||
		(sd.LogEndOffset > 0 && (len(sd.LeaderEpochs) != 1 || sd.LeaderEpochs[0].StartOffset != 0)) {
		t.Errorf("segments json = %+v", sd)
	}
	code, body = webGet(t, "GET", base+"/segments?topic=wv&partition=0")
	if code != 200 || !strings.Contains(body, "00000000000000000000.log") || !strings.Contains(body, "kafka.log.LogSegment") {
		t.Errorf("segments page: %d\n%s", code, body)
	}
	code, body = webGet(t, "GET", base+"/segments?topic=wv&partition=0&format=body")
	if code != 200 || strings.Contains(body, "<html>") || !strings.Contains(body, "00000000000000000000.log") {
		t.Errorf("segments body fragment: %d\n%s", code, body)
	}

	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/segments?topic=nope&partition=0", 404},
		{"GET", "/segments?topic=wv&partition=7", 404},
		{"GET", "/segments?topic=wv&partition=x", 400},
		{"GET", "/segments?topic=wv&partition=-1", 400},
		{"GET", "/segments?topic=wv&partition=99999999999999999999", 400},
		{"GET", "/segments?topic=wv&partition=2147483648", 400},
		{"GET", "/segments?topic=wv", 400},
		{"GET", "/segments?partition=0", 400},
		{"GET", "/segments?topic=" + url.QueryEscape("../../etc") + "&partition=0", 400},
		{"GET", "/segments?topic=a%2Fb&partition=0", 400},
		{"GET", "/segments?topic=a%00b&partition=0", 400},
		{"GET", "/segments?topic=" + strings.Repeat("t", 250) + "&partition=0", 400},
		{"GET", "/nosuchpage", 404},
		{"POST", "/", 405},
		{"DELETE", "/partitions", 405},
		{"PUT", "/segments?topic=wv&partition=0", 405},
		{"HEAD", "/partitions", 200},
	} {
		if code, body := webGet(t, c.method, base+c.path); code != c.want {
			t.Errorf("%s %s = %d, want %d: %s", c.method, c.path, code, c.want, body)
		}
	}
}

// TestWebViewFollowerLag: with two brokers, the leader's /partitions shows its follower's
// log end offset (as its fetches report it) caught up, and the follower's page its own replica.
func TestWebViewFollowerLag(t *testing.T) {
	chroot := testChroot(t)
	brokers := map[int32]*Broker{
		1: startTestBroker(t, chroot, map[string]string{"broker.id": "1", "samsa.http.listener": "127.0.0.1:0"}),
	}
	waitController(t, brokers[1])
	brokers[2] = startTestBroker(t, chroot, map[string]string{"broker.id": "2", "samsa.http.listener": "127.0.0.1:0"})
	adminWaitFor(t, 15*time.Second, "broker 2 alive", func() bool { return brokers[1].Metadata().IsBrokerAlive(2) })

	cl := kgoClient(t, brokers[1].Addr("PLAINTEXT"), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 2, nil, "wvr"); err != nil || r.Err != nil {
		t.Fatalf("create wvr: %v %v", err, r.Err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "wvr", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pm, ok := brokers[1].Metadata().Partition(logstore.TopicPartition{Topic: "wvr", Partition: 0})
	if !ok {
		t.Fatal("wvr-0 not in broker 1's metadata cache")
	}
	leader, follower := brokers[pm.Leader], brokers[3-pm.Leader]

	partitionOf := func(b *Broker) webPartition {
		var parts []webPartition
		code, body := webGet(t, "GET", "http://"+b.HTTPAddr()+"/partitions?format=json")
		if err := json.Unmarshal([]byte(body), &parts); err != nil || code != 200 {
			t.Fatalf("partitions json: %d %v\n%s", code, err, body)
		}
		for _, p := range parts {
			if p.Topic == "wvr" {
				return p
			}
		}
		t.Fatalf("wvr missing from broker %d's /partitions: %s", b.ID(), body)
		return webPartition{}
	}
	// The follower's LEO is what its last fetch asked for, so it reaches 3 on the fetch after.
	adminWaitFor(t, 10*time.Second, "follower caught up on the leader's page", func() bool {
		p := partitionOf(leader)
		return p.IsLeader && p.LogEndOffset == 3 && len(p.Followers) == 1 &&
			p.Followers[0].ID == follower.ID() && p.Followers[0].LogEndOffset == 3 && p.Followers[0].Lag == 0
	})
	if p := partitionOf(follower); !p.Hosted || p.IsLeader || p.LogEndOffset != 3 || len(p.Followers) != 0 || len(p.ISR) != 2 {
		t.Errorf("follower's view of wvr-0: %+v", p)
	}
	var cd webClusterData
	_, body := webGet(t, "GET", "http://"+follower.HTTPAddr()+"/?format=json")
	if err := json.Unmarshal([]byte(body), &cd); err != nil || len(cd.Brokers) != 2 || cd.ControllerID != 1 || cd.BrokerID != follower.ID() || cd.ActiveHere != (follower.ID() == 1) {
		t.Errorf("follower's cluster json: %v %+v", err, cd)
	}
}
