package controller

// Scripted step tests of the event loop's decisions, etcd-raft style: each file under
// testdata/ is a sequence of commands, each followed by "----" and the expected output (the
// ZooKeeper writes and the broker requests it caused). Run with -rewrite to regenerate, then
// review the diff.
//
// Commands:
//   broker up <id> [rack]           register /brokers/ids/<id> (a new czxid each time)
//   broker down <id>                its znode disappears
//   topic <name> <p>=<r,r,...> ...  create /brokers/topics/<name> (no topic id, like an old tool)
//   topic-config <name> <k>=<v>     set /config/topics/<name>
//   corrupt-topic <name>            /brokers/topics/<name> holds malformed JSON
//   corrupt-state <topic>-<p> [fixed]  its state znode holds malformed JSON ("fixed": no longer)
//   state <topic>-<p> <leader> <leader_epoch> <isr,...> [zkVersion]   write a partition state as a tool/old controller would
//   set-unclean <bool>              broker default unclean.leader.election.enable
//   elect [epoch]                   this broker (id 0 unless the controller id is set) wins: Startup
//   event <BrokerChange|TopicChange|PartitionModifications <topic>|TopicDeletion|ControllerChange>
//   alter <broker> <broker_epoch|cur> <topic>-<p> <leader_epoch> <isr,...> <partition_epoch>
//   bump-epoch                      another controller bumps /controller_epoch (fencing)
//   logdir-event <broker|malformed>  a broker writes /log_dir_event_notification/log_dir_event_<seq>
//   respond-lai <broker> [<topic>-<p>=<code> ...]  answer the broker's queued LeaderAndIsr (others: 0)
//   show-offline-dirs               print the replicas on offline log dirs per broker
//   show <topic>-<p>                print the partition's context state

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata expected outputs")

// fakeStore is an in-memory ZooKeeper with Kafka's znodes, recording every write.
type fakeStore struct {
	controllerID   int32
	epochZkVersion int32
	czxid          int64
	brokers        map[int32]zkmeta.BrokerInfo
	topics         map[string]*fakeTopic
	configs        map[string]map[string]string
	states         map[TopicPartition]zkmeta.PartitionState
	corruptStates  map[TopicPartition]bool // state znodes holding malformed JSON
	deletes        []string
	reassignZNode  []byte            // /admin/reassign_partitions, nil = absent
	preferredZNode []byte            // /admin/preferred_replica_election, nil = absent
	logDirEvents   map[string][]byte // children of /log_dir_event_notification
	logDirSeq      int
	out            *strings.Builder
}

type fakeTopic struct {
	a       zkmeta.TopicAssignment
	version int32
	corrupt bool
}

func newFakeStore(out *strings.Builder) *fakeStore {
	return &fakeStore{controllerID: -1, czxid: 100, brokers: map[int32]zkmeta.BrokerInfo{}, topics: map[string]*fakeTopic{},
		configs: map[string]map[string]string{}, states: map[TopicPartition]zkmeta.PartitionState{},
		corruptStates: map[TopicPartition]bool{}, logDirEvents: map[string][]byte{}, out: out}
}

func (s *fakeStore) WatchController() (int32, <-chan zkmeta.Event, error) {
	return s.controllerID, nil, nil
}
func (s *fakeStore) ChildrenW(path string) ([]string, <-chan zkmeta.Event, error) {
	var out []string
	switch path {
	case zkmeta.BrokerIDsPath:
		for id := range s.brokers {
			out = append(out, strconv.Itoa(int(id)))
		}
	case zkmeta.DeleteTopicsPath:
		out = slices.Clone(s.deletes)
	case zkmeta.LogDirEventNotificationPath:
		for name := range s.logDirEvents {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil, nil
}
func (s *fakeStore) GetBroker(id int32) (zkmeta.BrokerInfo, error) {
	b, ok := s.brokers[id]
	if !ok {
		return b, zkmeta.ErrNoNode
	}
	return b, nil
}
func (s *fakeStore) GetW(path string) ([]byte, int32, <-chan zkmeta.Event, error) {
	for id, b := range s.brokers {
		if path == zkmeta.BrokerIDPath(id) {
			return zkmeta.EncodeBrokerInfo(b), 0, nil, nil
		}
	}
	return nil, 0, nil, zkmeta.ErrNoNode
}
func (s *fakeStore) GetAllTopicsW() ([]string, <-chan zkmeta.Event, error) {
	var out []string
	for t := range s.topics {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil, nil
}
func (s *fakeStore) GetTopic(name string) (zkmeta.TopicAssignment, int32, error) {
	a, v, _, err := s.GetTopicW(name)
	return a, v, err
}
func (s *fakeStore) GetTopicW(name string) (zkmeta.TopicAssignment, int32, <-chan zkmeta.Event, error) {
	t, ok := s.topics[name]
	if !ok {
		return zkmeta.TopicAssignment{}, 0, nil, zkmeta.ErrNoNode
	}
	if t.corrupt {
		return zkmeta.TopicAssignment{}, 0, nil, fmt.Errorf("topic %q: malformed JSON", name)
	}
	return t.a, t.version, nil, nil
}
func (s *fakeStore) SetTopicAssignmentAsController(name string, a zkmeta.TopicAssignment, ezv int32) (int32, error) {
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: set topic %s REFUSED (controller moved)\n", name)
		return 0, zkmeta.ErrControllerMoved
	}
	t := s.topics[name]
	hadID := t.a.TopicID != ([16]byte{})
	t.a = cloneAssignment(a)
	t.version++
	if !hadID {
		fmt.Fprintf(s.out, "zk: set topic %s (topic id added) version=%d\n", name, t.version)
	} else {
		fmt.Fprintf(s.out, "zk: set topic %s version=%d %s\n", name, t.version, fmtAssignment(t.a))
	}
	return t.version, nil
}
func (s *fakeStore) GetTopicConfig(name string) (map[string]string, error) {
	return s.configs[name], nil
}
func (s *fakeStore) GetPartitionState(topic string, p int32) (zkmeta.PartitionState, error) {
	if s.corruptStates[TopicPartition{topic, p}] {
		return zkmeta.PartitionState{}, fmt.Errorf("%w: partition state %q", zkmeta.ErrBadJSON, `{"leader":`)
	}
	st, ok := s.states[TopicPartition{topic, p}]
	if !ok {
		return st, zkmeta.ErrNoNode
	}
	return st, nil
}
func (s *fakeStore) CreatePartitionState(topic string, p int32, st zkmeta.PartitionState, ezv int32) error {
	tp := TopicPartition{topic, p}
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: create %s REFUSED (controller moved)\n", tp)
		return zkmeta.ErrControllerMoved
	}
	if _, ok := s.states[tp]; ok {
		fmt.Fprintf(s.out, "zk: create %s exists\n", tp)
		return zkmeta.ErrNodeExists
	}
	st.PartitionEpoch = 0
	s.states[tp] = st
	fmt.Fprintf(s.out, "zk: create %s %s\n", tp, fmtState(st))
	return nil
}
func (s *fakeStore) UpdatePartitionState(topic string, p int32, st zkmeta.PartitionState, expected, ezv int32) (int32, error) {
	tp := TopicPartition{topic, p}
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: update %s REFUSED (controller moved)\n", tp)
		return 0, zkmeta.ErrControllerMoved
	}
	cur, ok := s.states[tp]
	if !ok {
		return 0, zkmeta.ErrNoNode
	}
	if cur.PartitionEpoch != expected {
		fmt.Fprintf(s.out, "zk: update %s BADVERSION (expected %d, at %d)\n", tp, expected, cur.PartitionEpoch)
		return 0, zkmeta.ErrBadVersion
	}
	st.PartitionEpoch = expected + 1
	s.states[tp] = st
	fmt.Fprintf(s.out, "zk: update %s %s\n", tp, fmtState(st))
	return st.PartitionEpoch, nil
}

func (s *fakeStore) DeleteTopicDeletionMarker(name string, ezv int32) error {
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: delete marker %s REFUSED (controller moved)\n", name)
		return zkmeta.ErrControllerMoved
	}
	s.deletes = slices.DeleteFunc(s.deletes, func(t string) bool { return t == name })
	fmt.Fprintf(s.out, "zk: delete /admin/delete_topics/%s\n", name)
	return nil
}

func (s *fakeStore) DeleteTopicZNodes(name string, ezv int32) error {
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: delete topic %s REFUSED (controller moved)\n", name)
		return zkmeta.ErrControllerMoved
	}
	delete(s.topics, name)
	delete(s.configs, name)
	for tp := range s.states {
		if tp.Topic == name {
			delete(s.states, tp)
		}
	}
	s.deletes = slices.DeleteFunc(s.deletes, func(t string) bool { return t == name })
	fmt.Fprintf(s.out, "zk: delete topic %s (topic, config, marker)\n", name)
	return nil
}

// The batch writes run one by one in partition order, so the recorded output is stable.
func sortedZkTPs[V any](m map[zkmeta.TopicPartition]V) []zkmeta.TopicPartition {
	out := make([]zkmeta.TopicPartition, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b zkmeta.TopicPartition) int {
		return compareTP(TopicPartition{a.Topic, a.Partition}, TopicPartition{b.Topic, b.Partition})
	})
	return out
}

func (s *fakeStore) CreatePartitionStates(states map[zkmeta.TopicPartition]zkmeta.PartitionState, ezv int32) map[zkmeta.TopicPartition]error {
	out := map[zkmeta.TopicPartition]error{}
	for _, k := range sortedZkTPs(states) {
		out[k] = s.CreatePartitionState(k.Topic, k.Partition, states[k], ezv)
	}
	return out
}

func (s *fakeStore) UpdatePartitionStates(states map[zkmeta.TopicPartition]zkmeta.PartitionState, ezv int32) map[zkmeta.TopicPartition]zkmeta.StateWriteResult {
	out := map[zkmeta.TopicPartition]zkmeta.StateWriteResult{}
	for _, k := range sortedZkTPs(states) {
		v, err := s.UpdatePartitionState(k.Topic, k.Partition, states[k], states[k].PartitionEpoch, ezv)
		out[k] = zkmeta.StateWriteResult{ZkVersion: v, Err: err}
	}
	return out
}

func (s *fakeStore) SessionID() int64 { return 1 }

func (s *fakeStore) EnsureFeatureZNode() (zkmeta.FeatureZNode, error) {
	return zkmeta.FeatureZNode{Version: 2, Status: zkmeta.FeatureStatusEnabled}, nil
}

func fmtState(st zkmeta.PartitionState) string {
	s := fmt.Sprintf("leader=%d leader_epoch=%d isr=%v partition_epoch=%d controller_epoch=%d",
		st.Leader, st.LeaderEpoch, st.ISR, st.PartitionEpoch, st.ControllerEpoch)
	if st.LeaderRecoveryState != 0 {
		s += " RECOVERING"
	}
	return s
}

// fakeChannels records the requests queued per broker; callbacks wait for "respond".
type fakeChannels struct {
	out     *strings.Builder
	pending []pendingRequest
	discard bool // do not format requests (random tests)
}

type pendingRequest struct {
	broker int32
	req    kmsg.Request
	cb     func(kmsg.Response)
}

func (f *fakeChannels) addBroker(info zkmeta.BrokerInfo) {
	fmt.Fprintf(f.out, "channel: add broker %d\n", info.ID)
}
func (f *fakeChannels) removeBroker(id int32) { fmt.Fprintf(f.out, "channel: remove broker %d\n", id) }
func (f *fakeChannels) shutdown()             {}
func (f *fakeChannels) send(id int32, req kmsg.Request, cb func(kmsg.Response)) {
	if f.discard {
		return
	}
	fmt.Fprintf(f.out, "send %d: %s\n", id, fmtRequest(req))
	if cb != nil {
		f.pending = append(f.pending, pendingRequest{id, req, cb})
	}
}

func fmtRequest(req kmsg.Request) string {
	var b strings.Builder
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		var leaders []int32
		for _, l := range r.LiveLeaders {
			leaders = append(leaders, l.BrokerID)
		}
		fmt.Fprintf(&b, "LeaderAndIsr controller=%d controller_epoch=%d broker_epoch=%d live_leaders=%v",
			r.ControllerID, r.ControllerEpoch, r.BrokerEpoch, leaders)
		for _, t := range r.TopicStates {
			if t.TopicID == ([16]byte{}) {
				fmt.Fprintf(&b, "\n    MISSING TOPIC ID %s", t.Topic)
			}
			for _, p := range t.PartitionStates {
				fmt.Fprintf(&b, "\n    %s-%d leader=%d leader_epoch=%d isr=%v partition_epoch=%d replicas=%v",
					t.Topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR, p.ZKVersion, p.Replicas)
				if len(p.AddingReplicas)+len(p.RemovingReplicas) > 0 {
					fmt.Fprintf(&b, " adding=%v removing=%v", p.AddingReplicas, p.RemovingReplicas)
				}
				if p.IsNew {
					b.WriteString(" is_new")
				}
				if p.LeaderRecoveryState != 0 {
					b.WriteString(" RECOVERING")
				}
			}
		}
	case *kmsg.UpdateMetadataRequest:
		var live []int32
		for _, l := range r.LiveBrokers {
			live = append(live, l.ID)
		}
		fmt.Fprintf(&b, "UpdateMetadata controller=%d controller_epoch=%d broker_epoch=%d live_brokers=%v",
			r.ControllerID, r.ControllerEpoch, r.BrokerEpoch, live)
		for _, t := range r.TopicStates {
			for _, p := range t.PartitionStates {
				fmt.Fprintf(&b, "\n    %s-%d leader=%d leader_epoch=%d isr=%v partition_epoch=%d replicas=%v offline=%v",
					t.Topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR, p.ZKVersion, p.Replicas, p.OfflineReplicas)
			}
		}
	case *kmsg.StopReplicaRequest:
		fmt.Fprintf(&b, "StopReplica controller=%d controller_epoch=%d broker_epoch=%d delete_partitions=%v",
			r.ControllerID, r.ControllerEpoch, r.BrokerEpoch, r.DeletePartitions)
		for _, t := range r.Topics {
			for _, p := range t.PartitionStates {
				fmt.Fprintf(&b, "\n    %s-%d leader_epoch=%d delete=%v", t.Topic, p.Partition, p.LeaderEpoch, p.Delete)
			}
		}
	default:
		fmt.Fprintf(&b, "%T", req)
	}
	return b.String()
}

func fmtAlterResponse(r *kmsg.AlterPartitionResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "AlterPartition response error=%d", r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, "\n    partition %d error=%d", p.Partition, p.ErrorCode)
			if p.ErrorCode == 0 {
				fmt.Fprintf(&b, " leader=%d leader_epoch=%d isr=%v partition_epoch=%d", p.LeaderID, p.LeaderEpoch, p.ISR, p.PartitionEpoch)
			}
		}
	}
	return b.String()
}

// stepHarness drives one eventLoop synchronously.
type stepHarness struct {
	t       *testing.T
	out     strings.Builder
	zk      *fakeStore
	loop    *eventLoop
	unclean bool
	epoch   int32
	quiet   bool // no logs (random tests)
}

func parseTP(s string) TopicPartition {
	i := strings.LastIndexByte(s, '-')
	p, _ := strconv.Atoi(s[i+1:])
	return TopicPartition{s[:i], int32(p)}
}

func parseIDs(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		out = append(out, int32(n))
	}
	return out
}

func (h *stepHarness) run(line string) {
	f := strings.Fields(line)
	switch f[0] {
	case "broker":
		id := int32(parseIDs(f[2])[0])
		if f[1] == "up" {
			h.zk.czxid++
			info := zkmeta.BrokerInfo{ID: id, Epoch: h.zk.czxid, Endpoints: []zkmeta.Endpoint{{ListenerName: "PLAINTEXT",
				Host: "127.0.0.1", Port: 9090 + id, SecurityProtocol: "PLAINTEXT"}}}
			if len(f) > 3 {
				info.Rack = f[3]
			}
			h.zk.brokers[id] = info
		} else {
			delete(h.zk.brokers, id)
		}
	case "topic":
		a := zkmeta.TopicAssignment{Partitions: map[int32][]int32{}}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			p, _ := strconv.Atoi(k)
			a.Partitions[int32(p)] = parseIDs(v)
		}
		if t, ok := h.zk.topics[f[1]]; ok {
			a.TopicID = t.a.TopicID
			t.a = a
			t.version++
			t.corrupt = false
		} else {
			h.zk.topics[f[1]] = &fakeTopic{a: a}
		}
	case "topic-config":
		k, v, _ := strings.Cut(f[2], "=")
		h.zk.configs[f[1]] = map[string]string{k: v}
	case "corrupt-topic":
		h.zk.topics[f[1]] = &fakeTopic{corrupt: true}
	case "corrupt-state":
		// corrupt-state <topic>-<p> [fixed]: the state znode holds malformed JSON (or no longer).
		tp := parseTP(f[1])
		h.zk.corruptStates[tp] = len(f) < 3
	case "state":
		tp := parseTP(f[1])
		leader, _ := strconv.Atoi(f[2])
		le, _ := strconv.Atoi(f[3])
		zv := 0
		if len(f) > 5 {
			zv, _ = strconv.Atoi(f[5])
		}
		h.zk.states[tp] = zkmeta.PartitionState{LeaderAndIsr: zkmeta.LeaderAndIsr{Leader: int32(leader), LeaderEpoch: int32(le),
			ISR: parseIDs(f[4]), PartitionEpoch: int32(zv)}, ControllerEpoch: 1}
	case "set-unclean":
		h.unclean = f[1] == "true"
	case "elect":
		h.epoch++
		h.zk.epochZkVersion++
		h.zk.controllerID = 0
		log := testLog(h.t)
		if h.quiet {
			log.Logger.SetLevel(logrus.FatalLevel)
		}
		// Rebalance checks run only when a script asks ("event AutoRebalance").
		cfg := Config{BrokerID: 0, UncleanLeaderElectionEnable: h.unclean, Log: log, DisableAutoLeaderRebalance: true}
		cfg.setDefaults()
		h.loop = newEventLoop(cfg, h.zk, &fakeChannels{out: &h.out, discard: h.quiet}, h.epoch, h.zk.epochZkVersion, context.Background())
		h.process(startupEvent{})
	case "event":
		switch f[1] {
		case "BrokerChange":
			h.process(brokerChangeEvent{})
		case "TopicChange":
			h.process(topicChangeEvent{})
		case "PartitionModifications":
			h.process(partitionModificationsEvent{topic: f[2]})
		case "TopicDeletion":
			h.process(topicDeletionEvent{})
		case "BrokerModifications":
			h.process(brokerModificationEvent{id: parseIDs(f[2])[0]})
		case "AutoRebalance":
			h.process(autoPreferredReplicaLeaderElectionEvent{})
		case "ControllerChange":
			h.process(controllerChangeEvent{})
		case "LogDirEventNotification":
			h.process(logDirEventNotificationEvent{})
		default:
			h.t.Fatalf("unknown event %q", f[1])
		}
	case "alter":
		broker := int32(parseIDs(f[1])[0])
		var be int64 = -1
		if f[2] == "cur" {
			be = h.zk.brokers[broker].Epoch
		} else {
			be, _ = strconv.ParseInt(f[2], 10, 64)
		}
		tp := parseTP(f[3])
		le, _ := strconv.Atoi(f[4])
		pe, _ := strconv.Atoi(f[6])
		req := kmsg.NewPtrAlterPartitionRequest()
		req.SetVersion(3)
		req.BrokerID, req.BrokerEpoch = broker, be
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = h.zk.topics[tp.Topic].a.TopicID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = tp.Partition, int32(le), int32(pe)
		for _, id := range parseIDs(f[5]) {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: -1})
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		reply := make(chan *kmsg.AlterPartitionResponse, 1)
		h.process(alterPartitionEvent{req: req, reply: reply})
		fmt.Fprintln(&h.out, fmtAlterResponse(<-reply))
	case "broker-port":
		// broker-port <id> <port>: the broker rewrites its registration (same czxid).
		id := parseIDs(f[1])[0]
		port, _ := strconv.Atoi(f[2])
		b := h.zk.brokers[id]
		b.Endpoints = []zkmeta.Endpoint{{ListenerName: "PLAINTEXT", Host: "127.0.0.1", Port: int32(port), SecurityProtocol: "PLAINTEXT"}}
		h.zk.brokers[id] = b
	case "mark-delete":
		h.zk.deletes = append(h.zk.deletes, f[1])
	case "respond":
		// respond <broker> [error_code]: answer the broker's queued StopReplica requests.
		broker := parseIDs(f[1])[0]
		var code int16
		if len(f) > 2 {
			c, _ := strconv.Atoi(f[2])
			code = int16(c)
		}
		ch := h.loop.channels.(*fakeChannels)
		var keep []pendingRequest
		for _, p := range ch.pending {
			sr, ok := p.req.(*kmsg.StopReplicaRequest)
			if p.broker != broker || !ok {
				keep = append(keep, p)
				continue
			}
			resp := kmsg.NewPtrStopReplicaResponse()
			for _, t := range sr.Topics {
				for _, ps := range t.PartitionStates {
					resp.Partitions = append(resp.Partitions, kmsg.StopReplicaResponsePartition{Topic: t.Topic, Partition: ps.Partition, ErrorCode: code})
				}
			}
			p.cb(resp)
		}
		ch.pending = keep
		for _, ev := range h.loop.queue.take() {
			h.process(ev)
		}
	case "shutdown":
		// shutdown <broker> <broker_epoch|cur>: a ControlledShutdown request (v3).
		broker := parseIDs(f[1])[0]
		var be int64
		if f[2] == "cur" {
			be = h.zk.brokers[broker].Epoch
		} else {
			be, _ = strconv.ParseInt(f[2], 10, 64)
		}
		req := kmsg.NewPtrControlledShutdownRequest()
		req.SetVersion(3)
		req.BrokerID, req.BrokerEpoch = broker, be
		reply := make(chan *kmsg.ControlledShutdownResponse, 1)
		h.process(controlledShutdownEvent{req: req, reply: reply})
		resp := <-reply
		var remaining []string
		for _, p := range resp.PartitionsRemaining {
			remaining = append(remaining, TopicPartition{p.Topic, p.Partition}.String())
		}
		fmt.Fprintf(&h.out, "ControlledShutdown response error=%d remaining=%v\n", resp.ErrorCode, remaining)
	case "elect-leaders":
		// elect-leaders <preferred|unclean> [<topic>-<p> ...] (none: all partitions)
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(2)
		if f[1] == "unclean" {
			req.ElectionType = 1
		}
		idx := map[string]int{}
		for _, a := range f[2:] {
			tp := parseTP(a)
			i, ok := idx[tp.Topic]
			if !ok {
				req.Topics = append(req.Topics, kmsg.ElectLeadersRequestTopic{Topic: tp.Topic})
				i = len(req.Topics) - 1
				idx[tp.Topic] = i
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
		}
		reply := make(chan *kmsg.ElectLeadersResponse, 1)
		h.process(electLeadersEvent{req: req, reply: reply})
		resp := <-reply
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&h.out, "ElectLeaders %s-%d error=%d\n", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	case "logdir-event", "respond-lai", "show-offline-dirs":
		h.runLogDirFailure(f)
	case "unclean-config":
		h.process(topicUncleanLeaderElectionEnableEvent{topic: f[1]})
	case "unclean-default":
		// unclean-default <true|false>: the broker-level default changed dynamically.
		h.process(uncleanLeaderElectionEnableEvent{enable: f[1] == "true"})
	case "reassign", "zk-reassign", "zk-preferred", "list-reassignments", "drain", "show-topic":
		h.runReassignment(f, line)
	case "bump-epoch":
		h.zk.epochZkVersion++
		h.zk.controllerID = 99
	case "show":
		tp := parseTP(f[1])
		st, ok := h.loop.ctx.partitionLeadership[tp]
		fmt.Fprintf(&h.out, "%s %s", tp, h.loop.ctx.partitionStates[tp])
		if ok {
			fmt.Fprintf(&h.out, " %s", fmtState(st))
		}
		fmt.Fprintln(&h.out)
	default:
		h.t.Fatalf("unknown command %q", line)
	}
}

func (h *stepHarness) process(ev event) {
	if err := h.loop.process(ev); err != nil {
		fmt.Fprintf(&h.out, "resign: %v\n", errors.Is(err, errResign))
	}
}

func testLog(t testing.TB) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(tWriter{t})
	l.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(l)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestControllerSteps(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runStepFile(t, file) })
	}
}

// runStepFile runs the blocks of a script: command lines, "----", expected output, blank line.
func runStepFile(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h := &stepHarness{t: t}
	h.zk = newFakeStore(&h.out)
	var rewritten strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	var cmds []string
	inExpected := false
	var expected []string
	flush := func() {
		if len(cmds) == 0 {
			return
		}
		h.out.Reset()
		for _, c := range cmds {
			h.run(c)
		}
		got := strings.TrimRight(h.out.String(), "\n")
		want := strings.Join(expected, "\n")
		for _, c := range cmds {
			rewritten.WriteString(c + "\n")
		}
		rewritten.WriteString("----\n")
		if got != "" {
			rewritten.WriteString(got + "\n")
		}
		rewritten.WriteString("\n")
		if got != want && !*rewrite {
			t.Errorf("%s: after %q:\n--- got\n%s\n--- want\n%s", file, cmds, got, want)
		}
		cmds, expected, inExpected = nil, nil, false
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inExpected && line == "":
			flush()
		case inExpected:
			expected = append(expected, line)
		case line == "----":
			inExpected = true
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
			if len(cmds) == 0 {
				rewritten.WriteString(line + "\n")
			}
		default:
			cmds = append(cmds, line)
		}
	}
	flush()
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
