package broker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// wgGet GETs path on the broker's samsa.http.listener and returns status and body.
func wgGet(t *testing.T, b *Broker, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr() + path)
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

// wgGetJSON GETs path with ?format=json into v, failing unless 200.
func wgGetJSON(t *testing.T, b *Broker, path string, v any) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	code, body := wgGet(t, b, path+sep+"format=json")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// TestWebViewGroupsFollowZK: a real broker with records produced in separate batches and a
// group's committed offset serves /groups, /group, /follow and /zk, and answers bad input
// with 4xx.
func TestWebViewGroupsFollowZK(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"samsa.http.listener": "127.0.0.1:0",
		"group.initial.rebalance.delay.ms": "0", "log.index.interval.bytes": "1"})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	createTopicKadm(t, addr, "wv", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("wv"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 5; i++ { // one batch each: offsets 0..4
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "wv", Partition: 0, At: 4, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "wg", offs); err != nil {
		t.Fatal(err)
	}

	var groups struct {
		Groups []webGroupRow `json:"groups"`
	}
	wgGetJSON(t, b, "/groups", &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].GroupID != "wg" {
		t.Errorf("/groups = %+v, want the group wg", groups.Groups)
	}
	if code, body := wgGet(t, b, "/groups"); code != 200 || !strings.Contains(body, `href="/group?id=wg"`) || !strings.Contains(body, "GroupMetadataManager") {
		t.Errorf("/groups HTML: %d %s", code, body)
	}

	var g webGroupDetail
	wgGetJSON(t, b, "/group?id=wg", &g)
	if g.State != "Empty" || len(g.Offsets) != 1 {
		t.Fatalf("/group = %+v, want Empty with one offset", g)
	}
	if o := g.Offsets[0]; o.Committed != 4 || o.LogEndOffset != 5 || o.Lag != 1 || !strings.HasPrefix(o.LagSource, "local replica") {
		t.Errorf("offset row %+v, want committed 4, LEO 5, lag 1 from the local replica", o)
	}

	// A live consumer: a Stable group whose member's ConsumerProtocol assignment is decoded.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("wc"), kgo.ConsumeTopics("wv"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("wv-consumer"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if fs := cons.PollRecords(ctx, 5); fs.Err() != nil || fs.NumRecords() == 0 {
		t.Fatalf("poll: %v (%d records)", fs.Err(), fs.NumRecords())
	}
	var gc webGroupDetail
	adminWaitFor(t, 5*time.Second, "group wc to be Stable with a member", func() bool {
		wgGetJSON(t, b, "/group?id=wc", &gc)
		return gc.State == "Stable" && len(gc.Members) == 1
	})
	if m := gc.Members[0]; m.ClientID != "wv-consumer" || len(m.Assignment["wv"]) != 1 || gc.ProtocolType != "consumer" {
		t.Errorf("member %+v of %+v, want wv-consumer assigned wv [0]", m, gc)
	}
	if gc.Generation < 1 || gc.Leader != gc.Members[0].MemberID {
		t.Errorf("generation %d leader %q, want ≥ 1 and the one member", gc.Generation, gc.Leader)
	}

	var f webFollow
	wgGetJSON(t, b, "/follow?topic=wv&partition=0&offset=3", &f)
	if filepath.Base(f.SegmentFile) != "00000000000000000000.log" || f.SegmentBase != 0 {
		t.Errorf("segment %s base %d, want 00000000000000000000.log base 0", f.SegmentFile, f.SegmentBase)
	}
	if f.Batch == nil || f.Batch.BaseOffset != 3 || f.Batch.LastOffset != 3 || f.Batch.Magic != 2 {
		t.Errorf("batch %+v, want base 3 magic 2", f.Batch)
	}
	if !f.IndexFound || f.IndexAbsOffset > 3 || len(f.Scan) == 0 {
		t.Errorf("index lookup found=%v abs=%d scan=%v, want an entry ≤ 3 and a scan", f.IndexFound, f.IndexAbsOffset, f.Scan)
	}
	if !f.BelowHW || f.HighWatermark != 5 || len(f.Replicas) != 1 {
		t.Errorf("below HW %v, HW %d, replicas %v", f.BelowHW, f.HighWatermark, f.Replicas)
	}
	if len(f.GroupsPast) != 1 || f.GroupsPast[0].GroupID != "wg" {
		t.Errorf("groups past offset 3: %+v, want wg", f.GroupsPast)
	}
	var f4 webFollow // committed 4 = the next record to read: offset 4 is not consumed yet
	wgGetJSON(t, b, "/follow?topic=wv&partition=0&offset=4", &f4)
	if len(f4.GroupsPast) != 0 {
		t.Errorf("groups past offset 4: %+v, want none", f4.GroupsPast)
	}
	if code, body := wgGet(t, b, "/follow?topic=wv&partition=0&offset=3"); code != 200 || !strings.Contains(body, "OffsetIndex.lookup") {
		t.Errorf("/follow HTML: %d %s", code, body)
	}

	var z webZNode
	wgGetJSON(t, b, "/zk?path=/brokers/ids", &z)
	if len(z.Children) != 1 || z.Children[0] != "1" || z.Parent != "/brokers" {
		t.Errorf("/zk /brokers/ids = %+v, want child 1", z)
	}
	var z1 webZNode
	wgGetJSON(t, b, "/zk?path=/brokers/ids/1", &z1)
	if z1.DataKind != "json" || !strings.Contains(z1.Data, `"endpoints"`) || z1.Stat.EphemeralOwner == 0 {
		t.Errorf("/zk /brokers/ids/1 = %+v, want ephemeral JSON with endpoints", z1)
	}
	if code, body := wgGet(t, b, "/zk?path=/brokers"); code != 200 || !strings.Contains(body, `href="/zk?path=%2fbrokers/ids">ids</a>`) {
		t.Errorf("/zk HTML: %d %s", code, body)
	}

	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/group?id=nosuch", 404, "not known"},
		{"/group?id=a/b", 400, "path separator"},
		{"/group", 400, "missing"},
		{"/follow?topic=nosuch&partition=0&offset=0", 404, "unknown topic"},
		{"/follow?topic=wv&partition=7&offset=0", 404, "no partition 7"},
		{"/follow?topic=../etc&partition=0&offset=0", 400, ".."},
		{"/follow?topic=wv&partition=x&offset=0", 400, "not a decimal"},
		{"/follow?topic=wv&partition=-1&offset=0", 400, "outside"},
		{"/follow?topic=wv&partition=99999999999&offset=0", 400, "outside"},
		{"/follow?topic=wv&partition=0&offset=-5", 400, "outside"},
		{"/follow?topic=wv&partition=0&offset=99999999999999999999", 400, "not a decimal"},
		{"/follow?topic=wv&partition=0&offset=5", 404, "offset 5 is beyond the log end offset 5"},
		{"/follow?topic=wv&partition=0&offset=1000000", 404, "beyond the log end offset"},
		{"/zk?path=brokers", 400, "must start with /"},
		{"/zk?path=/brokers/../admin", 400, `".."`},
		{"/zk?path=/brokers//ids", 400, "empty"},
		{"/zk?path=/brokers/", 400, "empty"},
		{"/zk?path=" + url.QueryEscape("/a\x00b"), 400, "control"},
		{"/zk?path=/nosuch", 404, "does not exist"},
	} {
		code, body := wgGet(t, b, c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s = %d %q, want %d containing %q", c.path, code, strings.TrimSpace(body), c.code, c.want)
		}
	}
	var root webZNode
	wgGetJSON(t, b, "/zk", &root)
	if root.Path != "/" || len(root.Children) == 0 {
		t.Errorf("/zk root = %+v", root)
	}
	if code, body := wgGet(t, b, "/group?id=wg&format=body"); code != 200 || strings.Contains(body, "<html") || !strings.Contains(body, "committed offsets") {
		t.Errorf("/group ?format=body (the poll): %d %s", code, body)
	}
	head, err := http.Head("http://" + b.HTTPAddr() + "/follow?topic=wv&partition=0&offset=0")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK {
		t.Errorf("HEAD /follow = %d, want 200", head.StatusCode)
	}
	resp, err := http.Post("http://"+b.HTTPAddr()+"/zk?path=/brokers", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /zk = %d, want 405", resp.StatusCode)
	}
}
