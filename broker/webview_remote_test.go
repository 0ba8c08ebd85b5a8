package broker

// webview_remote_test.go: a broker's pages show the whole cluster: the other brokers'
// replicas and views, fetched from their samsa.http.listener found through DescribeConfigs,
// a group's lag on a partition hosted elsewhere from its leader's page, and a broker whose
// listener stops answering is marked as such.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// webFreePort is a TCP port free right now: the HTTP listener must be configured with a
// real port, since that configured value is what DescribeConfigs tells the peers.
func webFreePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func webJSON(t *testing.T, u string, v any) {
	t.Helper()
	code, body := webGet(t, "GET", u)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", u, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", u, err, body)
	}
}

func TestWebViewWholeCluster(t *testing.T) {
	chroot := testChroot(t)
	p1, p2 := webFreePort(t), webFreePort(t)
	b1 := startTestBroker(t, chroot, map[string]string{"broker.id": "1", "samsa.http.listener": "127.0.0.1:" + p1,
		"offsets.topic.num.partitions": "2"})
	waitController(t, b1)
	// Broker 2 binds every address: its peers reach it at the host it advertises.
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2", "samsa.http.listener": "0.0.0.0:" + p2,
		"offsets.topic.num.partitions": "2"})
	adminWaitFor(t, 15*time.Second, "both brokers alive in both caches", func() bool {
		return b1.Metadata().IsBrokerAlive(2) && b2.Metadata().IsBrokerAlive(1)
	})
	cl := kgoClient(t, b1.Addr("PLAINTEXT"), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 2, nil, "wvc"); err != nil || r.Err != nil {
		t.Fatalf("create wvc: %v %v", err, r.Err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "wvc", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + b1.HTTPAddr()
	addr2 := "127.0.0.1:" + p2
	partition := func(q string) webPartition {
		var parts []webPartition
		webJSON(t, base+"/partitions?format=json"+q, &parts)
		for _, p := range parts {
			if p.Topic == "wvc" {
				return p
			}
		}
		t.Fatalf("wvc missing from broker 1's /partitions")
		return webPartition{}
	}
	// Each replica as its own broker reports it: both logs at 3, high watermark 3, no lag.
	var wp webPartition
	adminWaitFor(t, 10*time.Second, "both replicas' views on broker 1's page", func() bool {
		wp = partition("")
		if len(wp.ReplicaViews) != 2 {
			return false
		}
		for _, v := range wp.ReplicaViews {
			if !v.Answered || !v.Hosted || v.LogEndOffset != 3 || v.HighWatermark != 3 || v.Lag != 0 || v.Size <= 0 {
				return false
			}
		}
		return true
	})
	for _, v := range wp.ReplicaViews {
		wantRole, wantHTTP := "follower", b1.HTTPAddr()
		if v.Broker == wp.Leader {
			wantRole = "leader"
		}
		if v.Broker == 2 {
			wantHTTP = addr2
		}
		if v.Role != wantRole || v.HTTP != wantHTTP || v.Note != "" {
			t.Errorf("replica view %+v: want role %s at %s", v, wantRole, wantHTTP)
		}
	}
	// Many viewers at once share fan-outs: at most one a second (webGatherTTL) beyond the first.
	rs := b1.webRemote()
	fanouts := func() int64 { rs.mu.Lock(); defer rs.mu.Unlock(); return rs.fanouts }
	rs.mu.Lock()
	delete(rs.gather, "/partitions") // forget the last views: the first viewer must gather
	rs.mu.Unlock()
	before, start := fanouts(), time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := http.Get(base + "/partitions?format=body"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n, most := fanouts()-before, 1+int64(time.Since(start)/webGatherTTL); n < 1 || n > most {
		t.Errorf("20 viewers in %v started %d fan-outs, want 1 to %d", time.Since(start), n, most)
	}
	if p := partition("&scope=local"); len(p.ReplicaViews) != 0 || !p.Hosted {
		t.Errorf("scope=local gathered: %+v", p)
	}
	code, body := webGet(t, "GET", base+"/partitions")
	if code != 200 || !strings.Contains(body, `href="http://`+addr2+`/segments?topic=wvc&amp;partition=0"`) {
		t.Errorf("partitions page lacks broker 2's segments link: %d\n%s", code, body)
	}

	// Every broker's view of the cluster: the same controller, both ZooKeeper sessions up.
	var cd webClusterData
	webJSON(t, base+"/?format=json", &cd)
	if len(cd.Views) != 2 {
		t.Fatalf("cluster views: %+v", cd.Views)
	}
	for _, v := range cd.Views {
		if !v.Answered || v.ControllerID != 1 || !v.ZKConnected || v.BrokersKnown != 2 || v.Self != (v.ID == 1) || v.Disagrees ||
			v.ActiveHere != (v.ID == 1) || v.ControllerEpoch != cd.ControllerEpoch {
			t.Errorf("view %+v", v)
		}
	}
	if cd.ControllerPage != "/controller" {
		t.Errorf("broker 1 is the controller: its page is %q", cd.ControllerPage)
	}
	if cd.Views[1].HTTP != addr2 || cd.Views[1].ZKSessionID == cd.Views[0].ZKSessionID {
		t.Errorf("broker 2's view %+v (broker 1's session %s)", cd.Views[1], cd.Views[0].ZKSessionID)
	}
	if code, body := webGet(t, "GET", base+"/"); code != 200 || !strings.Contains(body, "Every broker's view") ||
		!strings.Contains(body, `<a href="http://`+addr2+`/">`) {
		t.Errorf("cluster page: %d\n%s", code, body)
	}
	// Broker 2's own page gathers broker 1's view the same way.
	var cd2 webClusterData
	webJSON(t, "http://"+addr2+"/?format=json", &cd2)
	if len(cd2.Views) != 2 || !cd2.Views[0].Answered || cd2.Views[0].HTTP != b1.HTTPAddr() || !cd2.Views[1].Self ||
		cd2.ControllerPage != "http://"+b1.HTTPAddr()+"/controller" {
		t.Errorf("broker 2's views: %+v", cd2.Views)
	}

	// A partition only broker 2 holds: broker 1's segments page sends the reader there.
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "wv2", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{2}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	cr := adminDial(t, b1.Addr("PLAINTEXT")).request(adminCreateTopicsReq(15000, false, ct), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create wv2", cr.Topics[0].ErrorCode, nil)
	adminWaitFor(t, 10*time.Second, "wv2 in broker 1's cache", func() bool { return b1.Metadata().Contains("wv2") })
	if code, body := webGet(t, "GET", base+"/segments?topic=wv2&partition=0"); code != 404 ||
		!strings.Contains(body, "http://"+addr2+"/segments?topic=wv2&partition=0") {
		t.Errorf("segments of a partition broker 1 does not host: %d %s", code, body)
	}

	// A group that broker 1 coordinates, with an offset in wv2: its lag comes from the
	// log end offset broker 2, wv2's leader, reports on its own page.
	for i := 0; i < 2; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "wv2", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	group := ""
	adminWaitFor(t, 15*time.Second, "a group coordinated by broker 1", func() bool {
		for i := 0; i < 8 && group == ""; i++ {
			g := "wvg-" + string(rune('a'+i))
			if c := adm.FindGroupCoordinators(ctx, g); c.Ok() && c[g].NodeID == 1 {
				group = g
			}
		}
		return group != ""
	})
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "wv2", Partition: 0, At: 1, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, group, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	// The gathered views may be a second old: wait for one taken after wv2 was written.
	adminWaitFor(t, 10*time.Second, "the group's lag from broker 2's page", func() bool {
		var gd webGroupDetail
		webJSON(t, base+"/group?id="+group+"&format=json", &gd)
		return len(gd.Offsets) == 1 && gd.Offsets[0].LogEndOffset == 2 && gd.Offsets[0].Lag == 1 &&
			gd.Offsets[0].LagSource == "leader 2's own page ("+addr2+")"
	})

	// Broker 2 coordinates none of it, yet its group list and its "follow a record" for
	// wv2's offset 0 show the group, gathered from broker 1's coordinator
	// (webview_groups_remote.go).
	base2, page1 := "http://"+addr2, "http://"+b1.HTTPAddr()+"/group?id="+group
	adminWaitFor(t, 10*time.Second, "broker 2's group list names the group at broker 1", func() bool {
		var gl struct {
			Groups []webGroupRow `json:"groups"`
		}
		webJSON(t, base2+"/groups?format=json", &gl)
		for _, g := range gl.Groups {
			if g.GroupID == group {
				return g.Coordinator == 1 && g.Page == page1
			}
		}
		return false
	})
	adminWaitFor(t, 10*time.Second, "broker 2's follow page names the group past offset 0", func() bool {
		var f webFollow
		webJSON(t, base2+"/follow?topic=wv2&partition=0&offset=0&format=json", &f)
		return len(f.GroupsPast) == 1 && f.GroupsPast[0].GroupID == group && f.GroupsPast[0].Committed == 1 &&
			f.GroupsPast[0].Coordinator == 1 && f.GroupsPast[0].Page == page1
	})
	var f1 webFollow // offset 1 is the committed offset itself: not consumed yet
	webJSON(t, base2+"/follow?topic=wv2&partition=0&offset=1&format=json", &f1)
	if len(f1.GroupsPast) != 0 {
		t.Errorf("follow offset 1: groups past %+v, want none (committed 1 is the next record to read)", f1.GroupsPast)
	}

	// Broker 2's HTTP listener goes away while it stays registered: it is marked.
	b2.stopMetrics()
	adminWaitFor(t, 10*time.Second, "broker 2 marked as not answering", func() bool {
		var cd webClusterData
		webJSON(t, base+"/?format=json", &cd)
		return len(cd.Views) == 2 && !cd.Views[1].Answered && cd.Views[1].Error != ""
	})
	// Each page's views are gathered on their own: the partitions page follows.
	adminWaitFor(t, 10*time.Second, "broker 2's replica marked as not answering", func() bool {
		for _, v := range partition("").ReplicaViews {
			if v.Broker == 2 {
				return !v.Answered && !v.Hosted && strings.HasPrefix(v.Note, "no answer") && v.Lag == -1 && v.LogEndOffset == -1
			}
		}
		return false
	})
	if code, body := webGet(t, "GET", base+"/"); code != 200 || !strings.Contains(body, "no answer") {
		t.Errorf("cluster page without broker 2: %d\n%s", code, body)
	}
}

func TestWebResolveListener(t *testing.T) {
	for _, c := range []struct{ value, want, err string }{
		{"127.0.0.1:9404", "127.0.0.1:9404", ""},
		{"0.0.0.0:9404", "adv.example:9404", ""},
		{"[::]:9404", "adv.example:9404", ""},
		{":9404", "adv.example:9404", ""},
		{"host.example:80", "host.example:80", ""},
		{"", "", "no samsa.http.listener"},
		{"127.0.0.1:0", "", "ephemeral port"},
		{"nonsense", "", "missing port"},
	} {
		got, err := webResolveListener(7, c.value, "adv.example")
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("webResolveListener(%q) = %q, %v; want %q, %q", c.value, got, err, c.want, c.err)
		}
	}
}
