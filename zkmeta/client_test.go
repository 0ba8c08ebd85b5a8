package zkmeta

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

// What the client writes is exactly Kafka's bytes, at the chroot-prefixed path.
func TestZNodesGoldenInZooKeeper(t *testing.T) {
	c := newClient(t)
	c.now = func() time.Time { return time.UnixMilli(1712345678901) }
	raw := rawConn(t)
	root := chrootFor(t)

	if _, err := c.RegisterBroker(context.Background(), goldenBrokerInfo()); err != nil {
		t.Fatal(err)
	}
	topicID := mustTopicID(t, "sK4nYqZ8Rj2k8Cw0uVv6hA")
	if err := c.CreateTopic("orders", TopicAssignment{TopicID: topicID,
		Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	epoch, epochV, err := c.TryElectController(1)
	if err != nil || epoch != 1 {
		t.Fatalf("TryElectController = %d, %v", epoch, err)
	}
	if err := c.CreatePartitionState("orders", 0, PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, LeaderEpoch: 7,
		ISR: []int32{1, 3}}, ControllerEpoch: 3}, epochV); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetOrCreateClusterID("Ax9f3kKZQ3mWb8B2ZkbyBQ"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetTopicConfig("orders", map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}

	for path, want := range map[string]string{
		"/brokers/ids/1":                            goldenBroker,
		"/brokers/topics/orders":                    goldenTopic,
		"/brokers/topics/orders/partitions/0/state": goldenState,
		"/config/topics/orders":                     goldenConfig,
		"/config/changes/config_change_0000000000":  goldenConfigChange,
		"/controller":                               goldenController,
		"/controller_epoch":                         "1",
		"/cluster/id":                               goldenClusterID,
	} {
		got, _ := rawGet(t, raw, root+path)
		if string(got) != want {
			t.Errorf("%s:\n got  %s\n want %s", path, got, want)
		}
	}
	// Container nodes have null data, as Kafka's.
	for _, p := range []string{"/brokers/topics/orders/partitions", "/brokers/topics/orders/partitions/0", "/brokers/ids"} {
		if got, _ := rawGet(t, raw, root+p); got != nil {
			t.Errorf("%s: data %q, want null", p, got)
		}
	}
	// Ephemerals are ephemeral.
	for _, p := range []string{"/brokers/ids/1", "/controller"} {
		if _, st := rawGet(t, raw, root+p); st.EphemeralOwner != c.SessionID() {
			t.Errorf("%s: owner 0x%x, want our session 0x%x", p, st.EphemeralOwner, c.SessionID())
		}
	}
}

func TestCreateTopLevelPaths(t *testing.T) {
	c := newClient(t)
	if err := c.CreateTopLevelPaths(); err != nil { // idempotent
		t.Fatal(err)
	}
	raw := rawConn(t)
	for _, p := range []string{"/consumers", "/brokers/ids", "/brokers/topics", "/brokers/seqid", "/config/topics",
		"/config/clients", "/config/users", "/config/brokers", "/config/ips", "/config/changes", "/admin/delete_topics",
		"/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification"} {
		ok, st, err := raw.Exists(chrootFor(t) + p)
		if err != nil || !ok || st.EphemeralOwner != 0 {
			t.Errorf("%s: exists=%v err=%v", p, ok, err)
		}
	}
}

// zookeeper.connect with a chroot: created at connect, prefixed on every path, stripped from
// sequential names and event paths.
func TestChroot(t *testing.T) {
	log, _ := testLogger(t)
	raw := rawConn(t)
	chroot := chrootFor(t) + "/nested/kafka"
	c := connectTo(t, zkServer.Connect(chroot), 6*time.Second, log)
	if c.Chroot() != chroot {
		t.Fatalf("Chroot() = %q", c.Chroot())
	}
	if ok, _, err := raw.Exists(chroot); err != nil || !ok {
		t.Fatalf("chroot not created: %v %v", ok, err)
	}
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := raw.Exists(chroot + "/brokers/ids"); !ok {
		t.Fatal("/brokers/ids not under the chroot")
	}
	if ok, _, _ := raw.Exists("/brokers/ids"); ok {
		// Another package's test could have created it; only ours must not have.
		t.Log("note: /brokers/ids exists at the real root")
	}
	name, err := c.Create(ConfigChangesPath+"/"+ConfigChangePrefix, EncodeConfigChange("topics/a"), PersistentSequential)
	if err != nil || name != "/config/changes/config_change_0000000000" {
		t.Fatalf("sequential create = %q, %v", name, err)
	}
	name, err = c.CreateConfigChangeNotification("topics/b")
	if err != nil || name != "/config/changes/config_change_0000000001" {
		t.Fatalf("config change = %q, %v", name, err)
	}
	children, ch, err := c.ChildrenW(BrokerIDsPath)
	if err != nil || len(children) != 0 {
		t.Fatalf("ChildrenW = %v, %v", children, err)
	}
	if _, err := c.RegisterBroker(context.Background(), BrokerInfo{ID: 7, Endpoints: []Endpoint{{"PLAINTEXT", "h", 1, "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, ch, 5*time.Second); ev.Type != EventNodeChildrenChanged || ev.Path != BrokerIDsPath {
		t.Fatalf("event = %+v", ev)
	}
	// A second client on the parent chroot sees the same tree one level down.
	parent := connectTo(t, zkServer.Connect(chrootFor(t)+"/nested"), 6*time.Second, log)
	ids, err := parent.Children("/kafka/brokers/ids")
	if err != nil || !reflect.DeepEqual(ids, []string{"7"}) {
		t.Fatalf("children via parent chroot = %v, %v", ids, err)
	}
	// Multi-server connect strings with a chroot parse too.
	servers, root, err := parseConnect("a:1,b:2/x/y")
	if err != nil || !reflect.DeepEqual(servers, []string{"a:1", "b:2"}) || root != "/x/y" {
		t.Fatalf("parseConnect = %v %q %v", servers, root, err)
	}
}

func TestConditionalWrites(t *testing.T) {
	c := newClient(t)
	a := TopicAssignment{Partitions: map[int32][]int32{0: {1}}}
	if err := c.CreateTopic("t", a, map[string]string{"x": "1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic("t", a, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second CreateTopic = %v, want ErrTopicExists", err)
	}
	got, v, err := c.GetTopic("t")
	if err != nil || v != 0 || got.TopicID == ([16]byte{}) || !reflect.DeepEqual(got.Partitions, a.Partitions) {
		t.Fatalf("GetTopic = %+v v%d %v", got, v, err)
	}
	if cfg, err := c.GetTopicConfig("t"); err != nil || !reflect.DeepEqual(cfg, map[string]string{"x": "1"}) {
		t.Fatalf("config = %v %v", cfg, err)
	}
	got.Partitions[1] = []int32{1}
	if err := c.SetTopicAssignment("t", got, 5); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("stale SetTopicAssignment = %v, want ErrBadVersion", err)
	}
	if err := c.SetTopicAssignment("t", got, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.GetTopic("missing"); !errors.Is(err, ErrNoNode) {
		t.Fatalf("GetTopic(missing) = %v", err)
	}
	if _, _, err := c.GetTopic("t"); err != nil {
		t.Fatal(err)
	}

	_, epochV, err := c.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	s := PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1}}, ControllerEpoch: 1}
	if err := c.CreatePartitionState("t", 0, s, epochV); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitionState("t", 0, s, epochV); !errors.Is(err, ErrNodeExists) {
		t.Fatalf("second CreatePartitionState = %v", err)
	}
	s.LeaderEpoch = 1
	if _, err := c.UpdatePartitionState("t", 0, s, 3, epochV); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("stale UpdatePartitionState = %v, want ErrBadVersion", err)
	}
	nv, err := c.UpdatePartitionState("t", 0, s, 0, epochV)
	if err != nil || nv != 1 {
		t.Fatalf("UpdatePartitionState = %d, %v", nv, err)
	}
	st, err := c.GetPartitionState("t", 0)
	if err != nil || st.PartitionEpoch != 1 || st.LeaderEpoch != 1 {
		t.Fatalf("GetPartitionState = %+v %v", st, err)
	}
	all, err := c.GetPartitionStates("t")
	if err != nil || len(all) != 1 || all[0].PartitionEpoch != 1 {
		t.Fatalf("GetPartitionStates = %+v %v", all, err)
	}
}

// The first controller gets epoch 1; a deposed controller's writes fail with ErrControllerMoved.
func TestControllerElectionAndEpochFencing(t *testing.T) {
	a := newClient(t)
	log, _ := testLogger(t)
	b := connectTo(t, zkServer.Connect(chrootFor(t)), 6*time.Second, log)
	if id, err := a.GetControllerID(); err != nil || id != -1 {
		t.Fatalf("GetControllerID before election = %d, %v", id, err)
	}
	if _, _, err := a.GetControllerEpoch(); !errors.Is(err, ErrNoNode) {
		t.Fatalf("GetControllerEpoch before election = %v", err)
	}
	idA, watch, err := b.WatchController()
	if err != nil || idA != -1 {
		t.Fatalf("WatchController = %d %v", idA, err)
	}
	epoch, epochV, err := a.TryElectController(1)
	if err != nil || epoch != 1 || epochV != 1 {
		t.Fatalf("first election = epoch %d v%d %v; want epoch 1 v1", epoch, epochV, err)
	}
	if ev := recvEvent(t, watch, 5*time.Second); ev.Type != EventNodeCreated || ev.Path != ControllerPath {
		t.Fatalf("controller watch = %+v", ev)
	}
	if _, _, err := b.TryElectController(2); !errors.Is(err, ErrControllerExists) {
		t.Fatalf("second candidate = %v, want ErrControllerExists", err)
	}
	if err := a.CreateTopic("t", TopicAssignment{Partitions: map[int32][]int32{0: {1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	s := PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1, 2}}, ControllerEpoch: epoch}
	if err := a.CreatePartitionState("t", 0, s, epochV); err != nil {
		t.Fatal(err)
	}

	id, watch, err := b.WatchController()
	if err != nil || id != 1 {
		t.Fatalf("WatchController = %d %v", id, err)
	}
	if err := a.ResignController(1); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, watch, 5*time.Second); ev.Type != EventNodeDeleted {
		t.Fatalf("controller watch after resign = %+v", ev)
	}
	epoch2, epochV2, err := b.TryElectController(2)
	if err != nil || epoch2 != 2 || epochV2 != 2 {
		t.Fatalf("second election = %d v%d %v", epoch2, epochV2, err)
	}
	if e, v, err := a.GetControllerEpoch(); err != nil || e != 2 || v != 2 {
		t.Fatalf("GetControllerEpoch = %d v%d %v", e, v, err)
	}

	// The deposed controller (still holding epoch zkVersion 1) is fenced on every write.
	s.LeaderEpoch = 1
	if _, err := a.UpdatePartitionState("t", 0, s, 0, epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed UpdatePartitionState = %v, want ErrControllerMoved", err)
	}
	if err := a.CreatePartitionState("t", 1, s, epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed CreatePartitionState = %v, want ErrControllerMoved", err)
	}
	if _, err := a.SetTopicAssignmentAsController("t", TopicAssignment{Partitions: map[int32][]int32{0: {2}}}, epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed SetTopicAssignmentAsController = %v", err)
	}
	if err := a.DeleteTopicZNodes("t", epochV); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed DeleteTopicZNodes = %v", err)
	}
	if st, err := a.GetPartitionState("t", 0); err != nil || st.LeaderEpoch != 0 || st.PartitionEpoch != 0 {
		t.Fatalf("state changed by a deposed controller: %+v %v", st, err)
	}
	// The new one writes.
	if _, err := b.UpdatePartitionState("t", 0, s, 0, epochV2); err != nil {
		t.Fatal(err)
	}
	// Closing the session removes the ephemeral /controller.
	b.Close()
	waitFor(t, 5*time.Second, "/controller to go", func() bool { id, _ := a.GetControllerID(); return id == -1 })
	epoch3, _, err := a.TryElectController(1)
	if err != nil || epoch3 != 3 {
		t.Fatalf("third election = %d %v", epoch3, err)
	}
}

func TestWatches(t *testing.T) {
	c := newClient(t)
	if err := c.CreateTopic("w", TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	_, v, ch, err := c.GetTopicW("w")
	if err != nil || v != 0 {
		t.Fatal(v, err)
	}
	if err := c.SetTopicAssignment("w", TopicAssignment{Partitions: map[int32][]int32{0: {1}, 1: {1}}}, -1); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, ch, 5*time.Second); ev.Type != EventNodeDataChanged || ev.Path != TopicPath("w") {
		t.Fatalf("data watch = %+v", ev)
	}
	if _, ok := <-ch; ok {
		t.Fatal("watch channel not closed after firing")
	}
	topics, tch, err := c.GetAllTopicsW()
	if err != nil || !reflect.DeepEqual(topics, []string{"w"}) {
		t.Fatal(topics, err)
	}
	exists, ech, err := c.ExistsW(DeleteTopicPath("w"))
	if err != nil || exists {
		t.Fatal(exists, err)
	}
	if err := c.MarkTopicForDeletion("w"); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, ech, 5*time.Second); ev.Type != EventNodeCreated || ev.Path != DeleteTopicPath("w") {
		t.Fatalf("exists watch = %+v", ev)
	}
	if err := c.MarkTopicForDeletion("w"); !errors.Is(err, ErrTopicMarkedForDeletion) {
		t.Fatalf("second mark = %v", err)
	}
	if err := c.MarkTopicForDeletion("nope"); !errors.Is(err, ErrNoNode) {
		t.Fatalf("mark unknown = %v", err)
	}
	if m, err := c.GetTopicsMarkedForDeletion(); err != nil || !reflect.DeepEqual(m, []string{"w"}) {
		t.Fatal(m, err)
	}
	_, epochV, err := c.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitionState("w", 0, PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1}}}, epochV); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopicZNodes("w", epochV); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, tch, 5*time.Second); ev.Type != EventNodeChildrenChanged || ev.Path != TopicsPath {
		t.Fatalf("child watch = %+v", ev)
	}
	for _, p := range []string{TopicPath("w"), TopicConfigPath("w"), DeleteTopicPath("w")} {
		if ok, _, err := c.Exists(p); err != nil || ok {
			t.Errorf("%s still exists after DeleteTopicZNodes (%v)", p, err)
		}
	}
	// Close drops armed watches with EventNotWatching.
	_, dch, err := c.ChildrenW(BrokerIDsPath)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if ev := recvEvent(t, dch, 5*time.Second); ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrClosed) {
		t.Fatalf("watch after Close = %+v", ev)
	}
	if _, _, err := c.Get(TopicsPath); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v, want ErrClosed", err)
	}
}

func TestClusterIDAndBrokerIDGeneration(t *testing.T) {
	c := newClient(t)
	if _, err := c.GetClusterID(); !errors.Is(err, ErrNoNode) {
		t.Fatalf("GetClusterID on a new cluster = %v", err)
	}
	id, err := c.GetOrCreateClusterID("")
	if err != nil || len(id) != 22 {
		t.Fatalf("GetOrCreateClusterID = %q %v", id, err)
	}
	if again, err := c.GetOrCreateClusterID("other"); err != nil || again != id {
		t.Fatalf("second GetOrCreateClusterID = %q %v, want %q", again, err, id)
	}
	for want := int32(1001); want <= 1003; want++ {
		if got, err := c.GenerateBrokerID(1000); err != nil || got != want {
			t.Fatalf("GenerateBrokerID = %d %v, want %d", got, err, want)
		}
	}
	// Without top-level paths /brokers/seqid is created on demand.
	log, _ := testLogger(t)
	bare := connectTo(t, zkServer.Connect(chrootFor(t)+"_bare"), 6*time.Second, log)
	if got, err := bare.GenerateBrokerID(1000); err != nil || got != 1001 {
		t.Fatalf("GenerateBrokerID on bare tree = %d %v", got, err)
	}
}

func TestRegisterAndReadBrokers(t *testing.T) {
	c := newClient(t)
	info := BrokerInfo{ID: 2, Endpoints: []Endpoint{{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"}, {"INTERNAL", "127.0.0.1", 9093, "PLAINTEXT"}}}
	epoch, err := c.RegisterBroker(context.Background(), info)
	if err != nil || epoch <= 0 {
		t.Fatal(epoch, err)
	}
	// A repeated registration by the same session is ours: same epoch.
	if again, err := c.RegisterBroker(context.Background(), info); err != nil || again != epoch {
		t.Fatalf("repeated RegisterBroker = %d %v, want %d", again, err, epoch)
	}
	if _, err := c.RegisterBroker(context.Background(), BrokerInfo{ID: 1, Rack: "r1",
		Endpoints: []Endpoint{{"PLAINTEXT", "127.0.0.1", 9094, "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	all, err := c.GetAllBrokers()
	if err != nil || len(all) != 2 || all[0].ID != 1 || all[1].ID != 2 || all[1].Epoch != epoch || all[0].Rack != "r1" {
		t.Fatalf("GetAllBrokers = %+v %v", all, err)
	}
	if e, ok := all[1].Endpoint("INTERNAL"); !ok || e.Port != 9093 {
		t.Fatalf("Endpoint(INTERNAL) = %+v %v", e, ok)
	}
	if all[1].JMXPort != -1 || all[1].Version != 5 || all[1].Timestamp == 0 {
		t.Fatalf("registration fields: %+v", all[1])
	}
	ids, err := c.GetBrokerIDs()
	if err != nil || !reflect.DeepEqual(ids, []int32{1, 2}) {
		t.Fatal(ids, err)
	}
	if _, err := c.GetBroker(9); !errors.Is(err, ErrNoNode) {
		t.Fatalf("GetBroker(9) = %v", err)
	}
}

// Dropping the connection for less than the session timeout keeps the session: same id, the
// ephemeral node stays, no session event, and watches armed before still fire.
func TestReconnectKeepsSession(t *testing.T) {
	log, _ := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	c := connectTo(t, proxy.Connect(chrootFor(t)), 4*time.Second, log)
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	other := connectTo(t, zkServer.Connect(chrootFor(t)), 4*time.Second, log)
	events := c.SessionEvents()
	sid := c.SessionID()
	epoch, err := c.RegisterBroker(context.Background(), BrokerInfo{ID: 1, Endpoints: []Endpoint{{"PLAINTEXT", "h", 1, "PLAINTEXT"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, watch, err := c.ChildrenW(TopicsPath)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Partition()
	waitFor(t, 5*time.Second, "client to notice the disconnect", func() bool { return !c.Connected() })
	// Requests made while disconnected wait for the reconnection.
	done := make(chan error, 1)
	go func() { _, err := c.Create("/pending", nil, Persistent); done <- err }()
	time.Sleep(300 * time.Millisecond)
	proxy.Heal()
	if err := <-done; err != nil {
		t.Fatalf("request across reconnect: %v", err)
	}
	waitFor(t, 5*time.Second, "reconnect", c.Connected)
	if c.SessionID() != sid {
		t.Fatalf("session changed: 0x%x -> 0x%x", sid, c.SessionID())
	}
	if b, err := other.GetBroker(1); err != nil || b.Epoch != epoch {
		t.Fatalf("registration after reconnect: %+v %v", b, err)
	}
	if err := other.CreateTopic("after", TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, watch, 5*time.Second); ev.Type != EventNodeChildrenChanged {
		t.Fatalf("watch across reconnect = %+v", ev)
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected session event %+v", ev)
	default:
	}
}

// A partition longer than the session timeout expires the session: the ephemeral node goes,
// watches are dropped, SessionExpired then SessionReestablished arrive, and ReRegisterBroker
// registers again with a new broker epoch.
func TestSessionExpiryAndReRegistration(t *testing.T) {
	log, _ := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	const timeout = 1 * time.Second // ZooKeeper's minimum with tickTime 500
	c := connectTo(t, proxy.Connect(chrootFor(t)), timeout, log)
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	other := connectTo(t, zkServer.Connect(chrootFor(t)), 4*time.Second, log)
	events, events2 := c.SessionEvents(), c.SessionEvents()
	oldSession := c.SessionID()
	info := BrokerInfo{ID: 3, Endpoints: []Endpoint{{"PLAINTEXT", "h", 1, "PLAINTEXT"}}}
	epoch, err := c.RegisterBroker(context.Background(), info)
	if err != nil {
		t.Fatal(err)
	}
	_, watch, err := c.ChildrenW(BrokerIDsPath)
	if err != nil {
		t.Fatal(err)
	}

	proxy.Partition()
	waitFor(t, 10*time.Second, "the server to expire the session", func() bool {
		_, err := other.GetBroker(3)
		return errors.Is(err, ErrNoNode)
	})
	proxy.Heal()

	ev := recvSession(t, events, 10*time.Second)
	if ev.Type != SessionExpired || ev.SessionID != oldSession {
		t.Fatalf("first session event = %+v, want SessionExpired of 0x%x", ev, oldSession)
	}
	if w := recvEvent(t, watch, 5*time.Second); w.Type != EventNotWatching || !errors.Is(w.Err, ErrSessionExpired) {
		t.Fatalf("watch on expiry = %+v", w)
	}
	ev = recvSession(t, events, 10*time.Second)
	if ev.Type != SessionReestablished || ev.SessionID == oldSession || ev.SessionID != c.SessionID() {
		t.Fatalf("second session event = %+v (session now 0x%x)", ev, c.SessionID())
	}
	if ev2 := recvSession(t, events2, time.Second); ev2.Type != SessionExpired {
		t.Fatalf("second subscriber got %+v", ev2)
	}
	newEpoch, err := c.ReRegisterBroker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if newEpoch <= epoch {
		t.Fatalf("broker epoch after re-registration %d, want > %d", newEpoch, epoch)
	}
	b, err := other.GetBroker(3)
	if err != nil || b.Epoch != newEpoch || b.Endpoints[0].ConnectionString() != "PLAINTEXT://h:1" {
		t.Fatalf("re-registered broker = %+v %v", b, err)
	}
	_, st, _ := other.Get(BrokerIDPath(3))
	if st.EphemeralOwner != c.SessionID() {
		t.Fatalf("owner 0x%x, want new session 0x%x", st.EphemeralOwner, c.SessionID())
	}
}

// After a kill -9 the old registration lives until its session expires: RegisterBroker waits
// for it (logging that it waits) and succeeds once it is gone.
func TestRegisterBrokerWaitsForStaleRegistration(t *testing.T) {
	log, logs := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	crashed := connectTo(t, proxy.Connect(chrootFor(t)), time.Second, log)
	if err := crashed.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	info := BrokerInfo{ID: 5, Endpoints: []Endpoint{{"PLAINTEXT", "old", 1, "PLAINTEXT"}}}
	oldEpoch, err := crashed.RegisterBroker(context.Background(), info)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Partition() // the "crashed" broker stops talking; its session lives until it expires

	restarted := connectTo(t, zkServer.Connect(chrootFor(t)), 6*time.Second, log)
	start := time.Now()
	info.Endpoints[0].Host = "new"
	epoch, err := restarted.RegisterBroker(context.Background(), info)
	if err != nil {
		t.Fatalf("RegisterBroker after stale session: %v", err)
	}
	if epoch <= oldEpoch {
		t.Fatalf("epoch %d, want > %d", epoch, oldEpoch)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	if !strings.Contains(logs.String(), "waiting up to the session timeout") || !strings.Contains(logs.String(), "broker=5") {
		t.Fatalf("no wait logged:\n%s", logs.String())
	}
	b, err := restarted.GetBroker(5)
	if err != nil || b.Endpoints[0].Host != "new" {
		t.Fatalf("registration = %+v %v", b, err)
	}
}

// A live broker holding the id: RegisterBroker gives up after the session timeout.
func TestRegisterBrokerIDTaken(t *testing.T) {
	live := newClient(t)
	if _, err := live.RegisterBroker(context.Background(), BrokerInfo{ID: 6, Endpoints: []Endpoint{{"PLAINTEXT", "h", 1, "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger(t)
	dup := connectTo(t, zkServer.Connect(chrootFor(t)), time.Second, log)
	start := time.Now()
	_, err := dup.RegisterBroker(context.Background(), BrokerInfo{ID: 6, Endpoints: []Endpoint{{"PLAINTEXT", "h", 2, "PLAINTEXT"}}})
	if !errors.Is(err, ErrBrokerIDTaken) {
		t.Fatalf("RegisterBroker duplicate = %v, want ErrBrokerIDTaken", err)
	}
	if d := time.Since(start); d < 1400*time.Millisecond || d > 4*time.Second {
		t.Fatalf("gave up after %v, want about the session timeout (1s) + 0.5s grace", d)
	}
	if !strings.Contains(err.Error(), "broker id 6") || !strings.Contains(err.Error(), "zookeeper.session.timeout.ms") {
		t.Fatalf("error message not clear: %v", err)
	}
	// Cancelling the context stops the wait early.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := dup.RegisterBroker(ctx, BrokerInfo{ID: 6}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RegisterBroker with cancelled ctx = %v", err)
	}
}

func TestTopicConfigsAndNotifications(t *testing.T) {
	c := newClient(t)
	if err := c.CreateTopic("cfg", TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get(TopicConfigPath("cfg"))
	if err != nil || string(data) != goldenEmptyConfig {
		t.Fatalf("config of a topic without overrides = %s %v", data, err)
	}
	// Topic creation writes no change notification (AdminZkClient).
	if ch, err := c.Children(ConfigChangesPath); err != nil || len(ch) != 0 {
		t.Fatalf("changes after create = %v %v", ch, err)
	}
	if err := c.SetTopicConfig("cfg", map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := c.GetTopicConfig("cfg"); err != nil || cfg["retention.ms"] != "1000" || len(cfg) != 1 {
		t.Fatalf("GetTopicConfig = %v %v", cfg, err)
	}
	name, err := c.SetEntityConfig(ConfigTypeBroker, "<default>", map[string]string{"log.cleaner.threads": "2"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Children(ConfigChangesPath)
	sort.Strings(ch)
	if err != nil || !reflect.DeepEqual(ch, []string{"config_change_0000000000", "config_change_0000000001"}) ||
		name != ConfigChangesPath+"/config_change_0000000001" {
		t.Fatalf("changes = %v %v (last %s)", ch, err, name)
	}
	data, _, _ = c.Get(ConfigChangesPath + "/" + ch[1])
	if typ, n, err := DecodeConfigChange(data); err != nil || typ != "brokers" || n != "<default>" {
		t.Fatalf("notification = %s %s %v", typ, n, err)
	}
	if cfg, err := c.GetEntityConfig(ConfigTypeUser, "nobody"); err != nil || len(cfg) != 0 {
		t.Fatalf("missing entity config = %v %v", cfg, err)
	}
}

var _ = zk.ErrNoNode // keep the import for raw helpers

func TestBatchedPartitionStates(t *testing.T) {
	c := newClient(t)
	_, epochV, err := c.TryElectController(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"__consumer_offsets", "other"} {
		if err := c.CreateTopic(topic, TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	states := map[TopicPartition]PartitionState{}
	for p := int32(0); p < 50; p++ {
		states[TopicPartition{"__consumer_offsets", p}] = PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 1, ISR: []int32{1}}, ControllerEpoch: 1}
	}
	states[TopicPartition{"other", 0}] = PartitionState{LeaderAndIsr: LeaderAndIsr{Leader: 2, ISR: []int32{2}}, ControllerEpoch: 1}
	for tp, err := range c.CreatePartitionStates(states, epochV) {
		if err != nil {
			t.Fatalf("%v: %v", tp, err)
		}
	}
	if errs := c.CreatePartitionStates(map[TopicPartition]PartitionState{{"other", 0}: {}}, epochV); !errors.Is(errs[TopicPartition{"other", 0}], ErrNodeExists) {
		t.Fatalf("recreate = %v", errs)
	}
	read, err := c.GetPartitionStates("__consumer_offsets")
	if err != nil || len(read) != 50 {
		t.Fatalf("GetPartitionStates = %d %v", len(read), err)
	}
	upd := map[TopicPartition]PartitionState{}
	for p, s := range read {
		s.LeaderEpoch++
		if p == 7 {
			s.PartitionEpoch = 9 // stale
		}
		upd[TopicPartition{"__consumer_offsets", p}] = s
	}
	for tp, r := range c.UpdatePartitionStates(upd, epochV) {
		if tp.Partition == 7 {
			if !errors.Is(r.Err, ErrBadVersion) {
				t.Fatalf("stale update of %v = %+v", tp, r)
			}
			continue
		}
		if r.Err != nil || r.ZkVersion != 1 {
			t.Fatalf("%v: %+v", tp, r)
		}
	}
	for tp, r := range c.UpdatePartitionStates(upd, epochV+5) {
		if !errors.Is(r.Err, ErrControllerMoved) {
			t.Fatalf("%v with wrong epoch version: %+v", tp, r)
		}
	}
}

func TestConnectTimesOutWithoutServer(t *testing.T) {
	log, _ := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	proxy.Partition()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if c, err := Connect(ctx, proxy.Connect("/x"), 2*time.Second, log); err == nil {
		c.Close()
		t.Fatal("Connect succeeded without a server")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Connect took %v to give up", d)
	}
}

// ZOOKEEPER-2985: a registration left by an earlier (expired) session of this same client is
// deleted and re-created at once instead of waited for.
func TestRegisterBrokerReplacesOwnPreviousSession(t *testing.T) {
	old := newClient(t)
	if _, err := old.RegisterBroker(context.Background(), BrokerInfo{ID: 8, Endpoints: []Endpoint{{"PLAINTEXT", "h", 1, "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	log, logs := testLogger(t)
	c := connectTo(t, zkServer.Connect(chrootFor(t)), 6*time.Second, log)
	c.mu.Lock()
	c.mu.prevSessions = append(c.mu.prevSessions, old.SessionID())
	c.mu.Unlock()
	start := time.Now()
	epoch, err := c.RegisterBroker(context.Background(), BrokerInfo{ID: 8, Endpoints: []Endpoint{{"PLAINTEXT", "h", 2, "PLAINTEXT"}}})
	if err != nil || time.Since(start) > time.Second {
		t.Fatalf("RegisterBroker = %d %v after %v", epoch, err, time.Since(start))
	}
	_, st, _ := c.Get(BrokerIDPath(8))
	if st.EphemeralOwner != c.SessionID() || st.Czxid != epoch {
		t.Fatalf("owner 0x%x czxid %d", st.EphemeralOwner, st.Czxid)
	}
	if !strings.Contains(logs.String(), "expired session of this broker") {
		t.Fatal("replacement not logged")
	}
}

func TestFeatureProducerIDsAndLogDirEvents(t *testing.T) {
	c := newClient(t)
	f, err := c.EnsureFeatureZNode()
	if err != nil || f.Status != FeatureStatusEnabled {
		t.Fatal(f, err)
	}
	if data, _, _ := c.Get(FeaturePath); string(data) != goldenFeature {
		t.Fatalf("/feature = %s", data)
	}
	if _, err := c.Set(FeaturePath, []byte(`{"features":{"x":{"min_version_level":1,"max_version_level":2}},"version":1,"status":0}`), -1); err != nil {
		t.Fatal(err)
	}
	if f, err := c.EnsureFeatureZNode(); err != nil || f.Status != FeatureStatusEnabled || f.Features["x"] != 2 {
		t.Fatal(f, err)
	}
	for i, want := range []ProducerIDBlock{{1, 0, 999}, {2, 1000, 1999}, {1, 2000, 2999}} {
		b, err := c.AllocateProducerIDBlock(want.BrokerID)
		if err != nil || b != want {
			t.Fatalf("block %d = %+v %v, want %+v", i, b, err, want)
		}
	}
	p, err := c.CreateLogDirEventNotification(3)
	if err != nil || p != "/log_dir_event_notification/log_dir_event_0000000000" {
		t.Fatal(p, err)
	}
	data, _, _ := c.Get(p)
	if id, err := DecodeLogDirEvent(data); err != nil || id != 3 {
		t.Fatal(id, err)
	}
}

// A subscriber that reads nothing while the session expires twice still gets every session
// event afterwards, in order: both expiries (with the sessions they ended) and both new
// sessions. Nothing is dropped.
func TestSlowSessionSubscriberSeesEveryExpiry(t *testing.T) {
	log, logs := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	const timeout = 1 * time.Second // ZooKeeper's minimum with tickTime 500
	c := connectTo(t, proxy.Connect(chrootFor(t)), timeout, log)
	other := connectTo(t, zkServer.Connect(chrootFor(t)), 4*time.Second, log)
	slow, fast := c.SessionEvents(), c.SessionEvents()

	var want []SessionEvent
	for round := 0; round < 2; round++ {
		old := c.SessionID()
		if _, err := c.Create("/alive", nil, Ephemeral); err != nil {
			t.Fatal(err)
		}
		proxy.Partition()
		waitFor(t, 10*time.Second, "the server to expire the session", func() bool {
			ok, _, err := other.Exists("/alive")
			return err == nil && !ok
		})
		proxy.Heal()
		if ev := recvSession(t, fast, 10*time.Second); ev.Type != SessionExpired || ev.SessionID != old {
			t.Fatalf("round %d: fast subscriber got %+v, want SessionExpired of 0x%x", round, ev, old)
		}
		ev := recvSession(t, fast, 10*time.Second)
		if ev.Type != SessionReestablished || ev.SessionID == old {
			t.Fatalf("round %d: fast subscriber got %+v, want SessionReestablished", round, ev)
		}
		want = append(want, SessionEvent{Type: SessionExpired, SessionID: old}, ev)
	}

	for i, w := range want {
		if got := recvSession(t, slow, time.Second); got != w {
			t.Fatalf("slow subscriber event %d = %+v, want %+v", i, got, w)
		}
	}
	select {
	case ev := <-slow:
		t.Fatalf("unexpected extra event %+v", ev)
	default:
	}
	if strings.Contains(logs.String(), "dropped") {
		t.Fatalf("an event was dropped:\n%s", logs.String())
	}
}
