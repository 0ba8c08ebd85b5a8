package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

func adminLogger(t testing.TB) *logrus.Entry {
	l, _ := newTestLogger(t)
	l.Logger.SetLevel(logrus.InfoLevel)
	return l
}

// testChroot is a chroot unique to the test.
func testChroot(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_", "#", "_").Replace(t.Name())
	return fmt.Sprintf("/%s_%d", name, time.Now().UnixNano())
}

// testBrokerConfig is a single-broker config on port 0 in a temp dir, under chroot.
func testBrokerConfig(t testing.TB, chroot string, overrides map[string]string) *config.Config {
	t.Helper()
	raw := map[string]string{
		"broker.id":                        "1",
		"zookeeper.connect":                testZK(t).Connect(chroot),
		"zookeeper.session.timeout.ms":     "6000",
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"offsets.topic.replication.factor": "1",
		// Kafka's 5 s between controlled-shutdown attempts would dominate test time.
		"controlled.shutdown.retry.backoff.ms": "100",
	}
	for k, v := range overrides {
		if v == "" {
			delete(raw, k)
			continue
		}
		raw[k] = v
	}
	cfg, _, err := config.FromMap(raw)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// startTestBroker starts one broker (port 0) and shuts it down when the test ends.
func startTestBroker(t testing.TB, chroot string, overrides map[string]string) *Broker {
	t.Helper()
	b, err := New(testBrokerConfig(t, chroot, overrides), adminLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(b.Shutdown)
	return b
}

// adminWaitFor polls fn until it holds or timeout passes.
func adminWaitFor(t testing.TB, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitController(t testing.TB, b *Broker) {
	t.Helper()
	adminWaitFor(t, 15*time.Second, "broker to become controller", func() bool { return b.Controller().IsActive() })
}

// adminConn speaks the Kafka protocol at an exact request version (kclient always picks
// the highest), so tests can pin versions.
type adminConn struct {
	t    testing.TB
	c    net.Conn
	r    *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
}

func adminDial(t testing.TB, addr string) *adminConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &adminConn{t: t, c: c, r: bufio.NewReader(c), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("h7-test"))}
}

// request sends req at version v (-1: its highest this broker serves) and decodes the answer.
func (tc *adminConn) request(req kmsg.Request, v int16) kmsg.Response {
	tc.t.Helper()
	if v < 0 {
		_, maxV, ok := SupportedVersions(req.Key())
		if !ok {
			tc.t.Fatalf("key %d not served", req.Key())
		}
		v = maxV
	}
	req.SetVersion(v)
	tc.corr++
	tc.c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := tc.c.Write(tc.fmt.AppendRequest(nil, req, tc.corr)); err != nil {
		tc.t.Fatalf("write %s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	var sz [4]byte
	if _, err := io.ReadFull(tc.r, sz[:]); err != nil {
		tc.t.Fatalf("read %s v%d response: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(tc.r, body); err != nil {
		tc.t.Fatalf("read %s v%d response: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != tc.corr {
		tc.t.Fatalf("correlation id %d, want %d", corr, tc.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if resp.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			tc.t.Fatalf("unexpected response header tags")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		tc.t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	return resp
}

func TestBrokerStartRegisterShutdown(t *testing.T) {
	chroot := testChroot(t)
	t0 := time.Now()
	b := startTestBroker(t, chroot, map[string]string{"broker.rack": "r1"})
	took := time.Since(t0)
	t.Logf("broker started in %v", took)
	if took > 5*time.Second {
		t.Errorf("start took %v", took)
	}
	if b.ID() != 1 {
		t.Fatalf("ID = %d", b.ID())
	}
	if len(b.ClusterID()) != 22 {
		t.Fatalf("ClusterID = %q, want 22 base64url characters", b.ClusterID())
	}
	addr := b.Addr("PLAINTEXT")
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr = %q", addr)
	}

	// The registration advertises the bound port and rack; its czxid is the broker epoch.
	info, err := b.ZK().GetBroker(1)
	if err != nil {
		t.Fatalf("GetBroker: %v", err)
	}
	ep, ok := info.Endpoint("PLAINTEXT")
	if !ok || strconv.Itoa(int(ep.Port)) != port || ep.Host != "127.0.0.1" || info.Rack != "r1" {
		t.Fatalf("registration %+v, want PLAINTEXT 127.0.0.1:%s rack r1", info, port)
	}
	if info.Epoch != b.BrokerEpoch() || b.BrokerEpoch() <= 0 {
		t.Fatalf("broker epoch %d, registration czxid %d", b.BrokerEpoch(), info.Epoch)
	}
	waitController(t, b)

	// A client can talk to it.
	tc := adminDial(t, addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "h7-test", "1.0"
	resp := tc.request(av, 3).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: %+v", resp)
	}

	b.Shutdown()
	b.Shutdown() // idempotent
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatalf("listener still open after Shutdown")
	}
	zk, err := zkmeta.Connect(context.Background(), testZK(t).Connect(chroot), 6*time.Second, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	if ids, err := zk.GetBrokerIDs(); err != nil || len(ids) != 0 {
		t.Fatalf("after shutdown /brokers/ids = %v, %v; want empty (clean session close)", ids, err)
	}
	if id, err := zk.GetClusterID(); err != nil || id != b.ClusterID() {
		t.Fatalf("/cluster/id = %q, %v", id, err)
	}
}

func TestBrokerGeneratedIDKeptAcrossRestart(t *testing.T) {
	chroot := testChroot(t)
	dir := t.TempDir()
	over := map[string]string{"broker.id": "-1", "log.dirs": dir}
	b := startTestBroker(t, chroot, over)
	if b.ID() != 1001 {
		t.Fatalf("generated id %d, want 1001 (first /brokers/seqid version + reserved.broker.max.id)", b.ID())
	}
	cluster := b.ClusterID()
	b.Shutdown()

	// meta.properties now holds the id: a restart takes it instead of generating 1002.
	b2 := startTestBroker(t, chroot, over)
	if b2.ID() != 1001 || b2.ClusterID() != cluster {
		t.Fatalf("after restart id %d cluster %q, want 1001 %q", b2.ID(), b2.ClusterID(), cluster)
	}
}

func TestBrokerStartFailsCleanly(t *testing.T) {
	// A port already taken: Start fails, nothing stays registered, Shutdown is harmless.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	chroot := testChroot(t)
	cfg := testBrokerConfig(t, chroot, map[string]string{"listeners": "PLAINTEXT://" + l.Addr().String()})
	b, err := New(cfg, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Start(ctx); err == nil {
		b.Shutdown()
		t.Fatal("Start succeeded on a taken port")
	}
	b.Shutdown()
	if err := b.Start(ctx); err == nil {
		t.Fatal("Start after Shutdown succeeded")
	}
	// Shutdown without Start is harmless too.
	nb, err := New(cfg, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	nb.Shutdown()
	// The log dir lock is released: another broker can use the same dir.
	b2 := startTestBroker(t, chroot, map[string]string{"log.dirs": cfg.LogDirs[0]})
	_ = b2
}

// Shutdown hands leadership over first (KafkaServer.controlledShutdown → the controller's
// ControlledShutdown election), so the partition never goes leaderless.
func TestBrokerControlledShutdownMovesLeadership(t *testing.T) {
	chroot := testChroot(t)
	b1 := startTestBroker(t, chroot, nil)
	waitController(t, b1)
	b2 := startTestBroker(t, chroot, map[string]string{"broker.id": "2"})
	adminWaitFor(t, 10*time.Second, "both brokers in the controller's cache", func() bool {
		return b1.Metadata().IsBrokerAlive(2) && b2.Metadata().ControllerID() == 1
	})
	tc := adminDial(t, b1.Addr("PLAINTEXT"))
	topic := adminTopic("handover", -1, -1)
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{2, 1} // broker 2 is the preferred leader
	topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{ra}
	resp := tc.request(adminCreateTopicsReq(15000, false, topic), 7).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %s", adminCodeName(resp.Topics[0].ErrorCode))
	}
	tp := logstore.TopicPartition{Topic: "handover", Partition: 0}
	adminWaitFor(t, 10*time.Second, "broker 2 leading", func() bool {
		pm, ok := b2.Metadata().Partition(tp)
		return ok && pm.Leader == 2
	})

	b2.Shutdown()
	pm, ok := b1.Metadata().Partition(tp)
	if !ok || pm.Leader != 1 {
		t.Fatalf("after broker 2's controlled shutdown the leader is %+v, want 1", pm)
	}
}
