package integration

// Issue 4 on real processes: controller failover after kill -9, fencing of a controller frozen
// past its ZooKeeper session (SIGSTOP), and the return of a killed broker. Every check reads
// ZooKeeper with the harness's raw client and asks each broker for Metadata directly.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionTimeout is the harness's zookeeper.session.timeout.ms.
const sessionTimeout = 6 * time.Second

// partitionStateZnode is /brokers/topics/<t>/partitions/<p>/state.
type partitionStateZnode struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
}

func (c *Cluster) partitionState(topic string, p int32) (partitionStateZnode, *zk.Stat, error) {
	var st partitionStateZnode
	path := fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p)
	data, stat, err := c.ZK().Get(c.Path(path))
	if err != nil {
		return st, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, nil, fmt.Errorf("%s: %w in %q", path, err, data)
	}
	return st, stat, nil
}

func (c *Cluster) controllerEpoch() (int32, error) {
	data, _, err := c.ZK().Get(c.Path("/controller_epoch"))
	if err != nil {
		return 0, err
	}
	e, err := strconv.ParseInt(string(data), 10, 32)
	return int32(e), err
}

// controllerID reads /controller: -1 if absent.
func (c *Cluster) controllerID() (int32, *zk.Stat, error) {
	data, stat, err := c.ZK().Get(c.Path("/controller"))
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil, nil
	}
	if err != nil {
		return -1, nil, err
	}
	var ctl controllerZnode
	if err := json.Unmarshal(data, &ctl); err != nil {
		return -1, nil, fmt.Errorf("/controller %q: %w", data, err)
	}
	return ctl.BrokerID, stat, nil
}

// writeTopicZnode creates a topic the way an old admin tool did: /config/topics/<t> and
// /brokers/topics/<t> (no topic id), straight in ZooKeeper.
func (c *Cluster) writeTopicZnode(t testing.TB, topic string, assignment map[int32][]int32) {
	t.Helper()
	parts := map[string][]int32{}
	for p, r := range assignment {
		parts[strconv.Itoa(int(p))] = r
	}
	data, _ := json.Marshal(map[string]any{"version": 2, "partitions": parts,
		"adding_replicas": map[string][]int32{}, "removing_replicas": map[string][]int32{}})
	for _, n := range []struct {
		path string
		data []byte
	}{{"/config/topics/" + topic, []byte(`{"version":1,"config":{}}`)}, {"/brokers/topics/" + topic, data}} {
		if _, err := c.ZK().Create(c.Path(n.path), n.data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
}

// metadataPartitions asks the broker at addr for topic's Metadata.
func metadataPartitions(t testing.TB, addr, topic string) (map[int32]kmsg.MetadataResponseTopicPartition, int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	md, err := requestTo[*kmsg.MetadataResponse](t, addr, req)
	if err != nil {
		return nil, -1, err
	}
	if len(md.Topics) != 1 {
		return nil, -1, fmt.Errorf("%s: Metadata for %s has %d topics", addr, topic, len(md.Topics))
	}
	if err := kerr.ErrorForCode(md.Topics[0].ErrorCode); err != nil {
		return nil, -1, fmt.Errorf("%s: topic %s: %w", addr, topic, err)
	}
	out := map[int32]kmsg.MetadataResponseTopicPartition{}
	for _, p := range md.Topics[0].Partitions {
		out[p.Partition] = p
	}
	return out, md.ControllerID, nil
}

// activeControllers asks every running broker whether it is the active controller: only the
// controller accepts a (validate-only) CreateTopics, the others answer NOT_CONTROLLER.
func activeControllers(t testing.TB, c *Cluster) ([]int32, error) {
	var active []int32
	for _, b := range c.Brokers {
		if !b.Running() {
			continue
		}
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "controller-probe", 1, 1
		req.Topics = append(req.Topics, rt)
		req.ValidateOnly, req.TimeoutMillis = true, 1000
		resp, err := requestTo[*kmsg.CreateTopicsResponse](t, b.Addr(), req)
		if err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 {
			return nil, fmt.Errorf("broker %d: CreateTopics answered %d topics", b.ID, len(resp.Topics))
		}
		switch code := resp.Topics[0].ErrorCode; code {
		case kerr.NotController.Code:
		case 0:
			active = append(active, b.ID)
		default:
			return nil, fmt.Errorf("broker %d: validate-only CreateTopics: %v", b.ID, kerr.ErrorForCode(code))
		}
	}
	return active, nil
}

// TestControllerKilledThenReturns: kill -9 the broker that is controller and leader of some
// RF 3 partitions. Within the session timeout + 3 s a new controller with a higher epoch
// exists, each partition it led has a live leader from its old ISR, and every broker's
// Metadata says so; an RF 1 partition on it is offline (unclean election is off). Then
// restart it: it registers again, becomes leader of its offline partition again (it serves
// ListOffsets as leader), gets LeaderAndIsr for a replica assigned to it while it was down
// (the partition folder appears) and answers Metadata with the cluster's state.
func TestControllerKilledThenReturns(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true})
	const rf3, partitions = "rf3", 6
	createTopic(t, c, rf3, partitions, 3, nil)
	ctl := c.WaitController(10 * time.Second)
	epoch0, err := c.controllerEpoch()
	if err != nil {
		t.Fatal(err)
	}
	// An RF 1 partition on the controller: offline while it is dead.
	c.writeTopicZnode(t, "solo", map[int32][]int32{0: {ctl}})
	waitLeaders(t, c, "solo", 1)

	before := map[int32]partitionStateZnode{}
	var led []int32
	for p := int32(0); p < partitions; p++ {
		st, _, err := c.partitionState(rf3, p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = st
		if st.Leader == ctl {
			led = append(led, p)
		}
	}
	if len(led) == 0 {
		t.Fatalf("controller %d leads none of %s's partitions: %v", ctl, rf3, before)
	}
	soloBefore, _, err := c.partitionState("solo", 0)
	if err != nil {
		t.Fatal(err)
	}

	victim := c.Broker(ctl)
	killed := time.Now()
	victim.Kill()
	var survivors []*Broker
	for _, b := range c.Brokers {
		if b.Running() {
			survivors = append(survivors, b)
		}
	}
	deadline := killed.Add(sessionTimeout + 3*time.Second)
	var newCtl int32
	check := func() error {
		id, _, err := c.controllerID()
		if err != nil {
			return err
		}
		if id < 0 || id == ctl {
			return fmt.Errorf("/controller is %d", id)
		}
		e, err := c.controllerEpoch()
		if err != nil {
			return err
		}
		if e <= epoch0 {
			return fmt.Errorf("/controller_epoch %d, was %d", e, epoch0)
		}
		newCtl = id
		for _, p := range led {
			st, _, err := c.partitionState(rf3, p)
			if err != nil {
				return err
			}
			if st.Leader == ctl || st.Leader < 0 || !slices.Contains(before[p].ISR, st.Leader) ||
				st.LeaderEpoch <= before[p].LeaderEpoch || slices.Contains(st.ISR, ctl) || st.ControllerEpoch != e {
				return fmt.Errorf("%s-%d state %+v (was %+v)", rf3, p, st, before[p])
			}
			for _, b := range survivors {
				md, mdCtl, err := metadataPartitions(t, b.Addr(), rf3)
				if err != nil {
					return err
				}
				mp := md[p]
				if mp.Leader != st.Leader || mp.LeaderEpoch != st.LeaderEpoch || !slices.Equal(mp.ISR, st.ISR) || mp.ErrorCode != 0 {
					return fmt.Errorf("broker %d: Metadata %s-%d leader %d epoch %d isr %v error %d, znode %+v",
						b.ID, rf3, p, mp.Leader, mp.LeaderEpoch, mp.ISR, mp.ErrorCode, st)
				}
				if mdCtl != id {
					return fmt.Errorf("broker %d: Metadata names controller %d, /controller %d", b.ID, mdCtl, id)
				}
			}
		}
		return nil
	}
	for {
		err := check()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after kill -9 of controller %d (session timeout %v + 3 s): %v", time.Since(killed).Round(time.Millisecond), ctl, sessionTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("controller %d killed: broker %d is controller and %s-%v have live ISR leaders everywhere after %v",
		ctl, newCtl, rf3, led, time.Since(killed).Round(time.Millisecond))

	// Unclean election is off: the RF 1 partition stays offline (leader -1, ISR kept).
	waitFor(t, 5*time.Second, func() error {
		st, _, err := c.partitionState("solo", 0)
		if err != nil {
			return err
		}
		if st.Leader != -1 || !slices.Equal(st.ISR, []int32{ctl}) || st.LeaderEpoch <= soloBefore.LeaderEpoch {
			return fmt.Errorf("solo-0 state %+v, want leader -1 isr [%d]", st, ctl)
		}
		for _, b := range survivors {
			md, _, err := metadataPartitions(t, b.Addr(), "solo")
			if err != nil {
				return err
			}
			if mp := md[0]; mp.Leader != -1 || mp.ErrorCode != kerr.LeaderNotAvailable.Code {
				return fmt.Errorf("broker %d: Metadata solo-0 leader %d error %d, want -1 LEADER_NOT_AVAILABLE", b.ID, mp.Leader, mp.ErrorCode)
			}
		}
		return nil
	})

	// While it is down, a topic gets a replica on it (an old tool writes the znode).
	others := []int32{}
	for _, b := range survivors {
		others = append(others, b.ID)
	}
	c.writeTopicZnode(t, "later", map[int32][]int32{0: {others[0], ctl, others[1]}})
	waitLeaders(t, c, "later", 1)
	laterDir := filepath.Join(victim.Dir, "later-0")
	if _, err := os.Stat(laterDir); err == nil {
		t.Fatalf("%s exists before broker %d returned", laterDir, ctl)
	}

	restarted := time.Now()
	victim.Restart()
	waitFor(t, 20*time.Second, func() error {
		if ids := c.ZKChildren("/brokers/ids"); !slices.Contains(ids, strconv.Itoa(int(ctl))) {
			return fmt.Errorf("/brokers/ids = %v", ids)
		}
		// Its offline partition (ISR [it]) elects it again.
		st, _, err := c.partitionState("solo", 0)
		if err != nil {
			return err
		}
		if st.Leader != ctl {
			return fmt.Errorf("solo-0 state %+v, want leader %d", st, ctl)
		}
		for _, b := range c.Brokers {
			md, _, err := metadataPartitions(t, b.Addr(), "solo")
			if err != nil {
				return err
			}
			if mp := md[0]; mp.Leader != ctl || mp.LeaderEpoch != st.LeaderEpoch || mp.ErrorCode != 0 {
				return fmt.Errorf("broker %d: Metadata solo-0 leader %d epoch %d error %d, znode %+v", b.ID, mp.Leader, mp.LeaderEpoch, mp.ErrorCode, st)
			}
		}
		// It acts as leader: LeaderAndIsr reached it.
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "solo"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		resp, err := requestTo[*kmsg.ListOffsetsResponse](t, victim.Addr(), lo)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return fmt.Errorf("broker %d: ListOffsets solo-0: %+v", ctl, resp.Topics)
		}
		// LeaderAndIsr for a replica it had never seen: its log is created.
		if _, err := os.Stat(laterDir); err != nil {
			return fmt.Errorf("replica later-0 not created on broker %d: %w", ctl, err)
		}
		// Its metadata cache has the whole cluster again.
		md, mdCtl, err := metadataPartitions(t, victim.Addr(), rf3)
		if err != nil {
			return err
		}
		if mdCtl != newCtl || len(md) != partitions {
			return fmt.Errorf("broker %d: Metadata controller %d, %d partitions of %s", ctl, mdCtl, len(md), rf3)
		}
		for p := int32(0); p < partitions; p++ {
			st, _, err := c.partitionState(rf3, p)
			if err != nil {
				return err
			}
			if mp := md[p]; mp.Leader != st.Leader || mp.LeaderEpoch != st.LeaderEpoch || mp.ErrorCode != 0 {
				return fmt.Errorf("broker %d: Metadata %s-%d leader %d epoch %d, znode %+v", ctl, rf3, p, mp.Leader, mp.LeaderEpoch, st)
			}
		}
		return nil
	})
	t.Logf("broker %d restarted: registered, leader of solo-0, replica later-0 created, metadata current after %v",
		ctl, time.Since(restarted).Round(time.Millisecond))
	if id := c.WaitController(time.Second); id != newCtl {
		t.Errorf("controller moved from %d to %d when broker %d returned", newCtl, id, ctl)
	}
}

// TestControllerPausedIsFenced: SIGSTOP the controller (also a leader) for 10 s, longer than
// its session, while a topic is created (its watch fires into the frozen process). Another
// broker takes over with epoch + 1. After SIGCONT there is exactly one controller, the epoch
// did not move again, and no partition state znode changed after the frozen broker's session
// ended unless it carries the new epoch: the deposed controller wrote nothing.
func TestControllerPausedIsFenced(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true})
	const rf3, partitions = "rf3", 3
	createTopic(t, c, rf3, partitions, 3, nil)
	ctl := c.WaitController(10 * time.Second)
	epoch0, err := c.controllerEpoch()
	if err != nil {
		t.Fatal(err)
	}
	victim := c.Broker(ctl)
	path := "/brokers/ids/" + strconv.Itoa(int(ctl))

	paused := time.Now()
	victim.Pause()
	resumed := false
	defer func() {
		if !resumed {
			victim.Resume()
		}
	}()
	// A topic created now: the frozen controller's topic watch fires into its socket.
	c.writeTopicZnode(t, "during-pause", map[int32][]int32{0: {0, 1, 2}, 1: {1, 2, 0}, 2: {2, 0, 1}})

	// The session ends: its registration goes. /brokers/ids's pzxid is then the zxid of that
	// deletion (the session's close), as long as no other broker comes or goes.
	var sessionEnd int64
	waitFor(t, sessionTimeout+3*time.Second, func() error {
		_, stat, ok := c.ZKGet(path)
		if ok {
			return fmt.Errorf("%s still there (ephemeral owner 0x%x)", path, stat.EphemeralOwner)
		}
		_, st, ok := c.ZKGet("/brokers/ids")
		if !ok {
			return errors.New("/brokers/ids missing")
		}
		sessionEnd = st.Pzxid
		return nil
	})
	t.Logf("controller %d's session ended %v after SIGSTOP (zxid 0x%x)", ctl, time.Since(paused).Round(time.Millisecond), sessionEnd)
	var newCtl int32
	waitFor(t, 5*time.Second, func() error {
		id, stat, err := c.controllerID()
		if err != nil {
			return err
		}
		if id < 0 || id == ctl {
			return fmt.Errorf("/controller is %d", id)
		}
		if stat.Czxid <= sessionEnd {
			return fmt.Errorf("/controller czxid 0x%x not after the session end 0x%x", stat.Czxid, sessionEnd)
		}
		newCtl = id
		return nil
	})
	if rest := 10*time.Second - time.Since(paused); rest > 0 {
		time.Sleep(rest)
	}
	victim.Resume()
	resumed = true
	t.Logf("controller %d resumed after %v; broker %d took over", ctl, time.Since(paused).Round(time.Millisecond), newCtl)

	// The frozen broker comes back as an ordinary broker: a new registration, and every
	// broker knows the new controller.
	waitFor(t, 15*time.Second, func() error {
		if _, _, ok := c.ZKGet(path); !ok {
			return fmt.Errorf("%s not registered again", path)
		}
		for _, b := range c.Brokers {
			md, mdCtl, err := metadataPartitions(t, b.Addr(), "during-pause")
			if err != nil {
				return err
			}
			if mdCtl != newCtl {
				return fmt.Errorf("broker %d: Metadata names controller %d, want %d", b.ID, mdCtl, newCtl)
			}
			for p, mp := range md {
				if mp.Leader < 0 || mp.ErrorCode != 0 {
					return fmt.Errorf("broker %d: during-pause-%d leader %d error %d", b.ID, p, mp.Leader, mp.ErrorCode)
				}
			}
		}
		return nil
	})
	// Exactly one controller, the new one, and it stays so.
	for i := 0; i < 3; i++ {
		active, err := activeControllers(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(active, []int32{newCtl}) {
			t.Fatalf("brokers acting as controller: %v, want [%d]", active, newCtl)
		}
		if id, _, err := c.controllerID(); err != nil || id != newCtl {
			t.Fatalf("/controller = %d (%v), want %d", id, err, newCtl)
		}
		if e, err := c.controllerEpoch(); err != nil || e != epoch0+1 {
			t.Fatalf("/controller_epoch = %d (%v), want %d: one failover only", e, err, epoch0+1)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// The deposed controller did nothing in its new session: that session holds none of the
	// watches a controller term sets (ZooKeeper's wchc lists watches by session), except at
	// most one from the single read that may have been in flight when the session ended (a
	// request queued while disconnected is sent in the next session; its result is dropped).
	_, regStat, ok := c.ZKGet(path)
	if !ok {
		t.Fatalf("%s gone", path)
	}
	watches, err := sessionWatches(regStat.EphemeralOwner)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("watches of broker %d's new session 0x%x: %v", ctl, regStat.EphemeralOwner, watches)
	var controllerWatches []string
	for _, w := range watches {
		if w == c.Path(path) {
			continue // its own registration
		}
		for _, p := range []string{"/brokers/topics", "/brokers/ids", "/admin", "/isr_change_notification", "/log_dir_event_notification"} {
			if w == c.Path(p) || strings.HasPrefix(w, c.Path(p)+"/") {
				controllerWatches = append(controllerWatches, w)
			}
		}
	}
	if len(controllerWatches) > 1 {
		t.Errorf("the deposed controller's new session watches %v: a controller term ran in it", controllerWatches)
	}

	// No partition state written after the session end under an older epoch.
	wroteAfter := 0
	for _, topic := range []string{rf3, "during-pause"} {
		for p := int32(0); p < partitions; p++ {
			st, stat, err := c.partitionState(topic, p)
			if err != nil {
				t.Fatal(err)
			}
			if stat.Mzxid > sessionEnd {
				wroteAfter++
				if st.ControllerEpoch != epoch0+1 {
					t.Errorf("%s-%d written at zxid 0x%x, after the deposed controller's session ended (0x%x), with controller_epoch %d",
						topic, p, stat.Mzxid, sessionEnd, st.ControllerEpoch)
				}
			} else if st.ControllerEpoch > epoch0 {
				t.Errorf("%s-%d: controller_epoch %d at zxid 0x%x, before the new controller existed", topic, p, st.ControllerEpoch, stat.Mzxid)
			}
			if topic == "during-pause" && st.ControllerEpoch != epoch0+1 {
				t.Errorf("%s-%d created under controller epoch %d, want %d (the new controller's)", topic, p, st.ControllerEpoch, epoch0+1)
			}
		}
	}
	if wroteAfter == 0 {
		t.Error("no partition state changed after the session ended: the check proves nothing")
	}
}

// sessionWatches lists the znodes a ZooKeeper session watches (the wchc four-letter word).
func sessionWatches(session int64) ([]string, error) {
	out, err := zkServer.FourLetterWord("wchc")
	if err != nil {
		return nil, fmt.Errorf("wchc: %w", err)
	}
	var paths []string
	var cur int64 = -1
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			v, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "0x"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("wchc line %q: %w", line, err)
			}
			cur = v
		case strings.TrimSpace(line) != "" && cur == session:
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	return paths, nil
}
