package controller

// Step-test support for partition reassignment (testdata/reassignment*.txt):
//   reassign <topic>-<p> <r,r,...|cancel> ...   AlterPartitionReassignments
//   zk-reassign <json>                          write /admin/reassign_partitions (then event ZkReassignment)
//   zk-reassign event                           process the znode's creation
//   list-reassignments                          ListPartitionReassignments (all)
//   drain                                       process queued events (e.g. PartitionReassignmentIsrChange)
//   show-topic <topic>                          the topic znode's replicas/adding/removing

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func cloneAssignment(a zkmeta.TopicAssignment) zkmeta.TopicAssignment {
	c := a
	clone := func(m map[int32][]int32) map[int32][]int32 {
		if m == nil {
			return nil
		}
		out := make(map[int32][]int32, len(m))
		for k, v := range m {
			out[k] = slices.Clone(v)
		}
		return out
	}
	c.Partitions, c.Adding, c.Removing = clone(a.Partitions), clone(a.Adding), clone(a.Removing)
	return c
}

func fmtAssignment(a zkmeta.TopicAssignment) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(a.Partitions)) {
		s := fmt.Sprintf("%d=%v", p, a.Partitions[p])
		if len(a.Adding[p])+len(a.Removing[p]) > 0 {
			s += fmt.Sprintf("(adding=%v removing=%v)", a.Adding[p], a.Removing[p])
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func (s *fakeStore) ExistsW(path string) (bool, <-chan zkmeta.Event, error) {
	switch path {
	case zkmeta.ReassignPartitionsPath:
		return s.reassignZNode != nil, nil, nil
	case zkmeta.PreferredReplicaElectionPath:
		return s.preferredZNode != nil, nil, nil
	}
	return false, nil, nil
}

func (s *fakeStore) GetReassignment() ([]zkmeta.ReassignmentEntry, error) {
	if s.reassignZNode == nil {
		return nil, zkmeta.ErrNoNode
	}
	return zkmeta.DecodeReassignment(s.reassignZNode)
}

func (s *fakeStore) SetReassignmentAsController(entries []zkmeta.ReassignmentEntry, ezv int32) error {
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: set reassign_partitions REFUSED (controller moved)\n")
		return zkmeta.ErrControllerMoved
	}
	if len(entries) == 0 {
		s.reassignZNode = nil
		fmt.Fprintf(s.out, "zk: delete /admin/reassign_partitions\n")
		return nil
	}
	s.reassignZNode = zkmeta.EncodeReassignment(entries)
	fmt.Fprintf(s.out, "zk: set /admin/reassign_partitions %s\n", s.reassignZNode)
	return nil
}

func (h *stepHarness) runReassignment(f []string, line string) {
	switch f[0] {
	case "reassign":
		ev := apiPartitionReassignmentEvent{targets: map[TopicPartition][]int32{}, cancel: map[TopicPartition]bool{},
			reply: make(chan map[TopicPartition]*reassignmentError, 1)}
		var order []TopicPartition
		for i := 1; i+1 < len(f); i += 2 {
			tp := parseTP(f[i])
			order = append(order, tp)
			switch f[i+1] {
			case "cancel":
				ev.cancel[tp] = true
			case "empty":
				ev.targets[tp] = []int32{}
			default:
				ev.targets[tp] = parseIDs(f[i+1])
			}
		}
		h.process(ev)
		res := <-ev.reply
		for _, tp := range order {
			if e := res[tp]; e != nil {
				fmt.Fprintln(&h.out, strings.TrimSpace(fmt.Sprintf("reassign %s error=%d %s", tp, e.code, e.msg)))
			} else {
				fmt.Fprintf(&h.out, "reassign %s error=0\n", tp)
			}
		}
	case "zk-preferred":
		if f[1] == "event" {
			h.process(zkPreferredReplicaElectionEvent{})
			return
		}
		h.zk.preferredZNode = []byte(strings.TrimSpace(strings.TrimPrefix(line, "zk-preferred")))
	case "zk-reassign":
		if f[1] == "event" {
			h.process(zkPartitionReassignmentEvent{})
			return
		}
		h.zk.reassignZNode = []byte(strings.TrimSpace(strings.TrimPrefix(line, "zk-reassign")))
	case "list-reassignments":
		res := h.loop.onListPartitionReassignments(nil)
		for _, tp := range sortedTPs(res) {
			a := res[tp]
			fmt.Fprintf(&h.out, "reassigning %s replicas=%v adding=%v removing=%v\n", tp, a.replicas, a.adding, a.removing)
		}
	case "drain":
		for {
			evs := h.loop.queue.take()
			if len(evs) == 0 {
				return
			}
			for _, ev := range evs {
				fmt.Fprintf(&h.out, "event: %s\n", ev)
				h.process(ev)
			}
		}
	case "show-topic":
		fmt.Fprintf(&h.out, "topic %s %s\n", f[1], fmtAssignment(h.zk.topics[f[1]].a))
	}
}

func (s *fakeStore) GetPreferredReplicaElection() ([]zkmeta.TopicPartition, error) {
	if s.preferredZNode == nil {
		return nil, zkmeta.ErrNoNode
	}
	return zkmeta.DecodePartitionList(s.preferredZNode)
}

func (s *fakeStore) DeleteAsController(ezv int32, paths ...string) error {
	if ezv != s.epochZkVersion {
		fmt.Fprintf(s.out, "zk: delete %v REFUSED (controller moved)\n", paths)
		return zkmeta.ErrControllerMoved
	}
	for _, p := range paths {
		switch p {
		case zkmeta.PreferredReplicaElectionPath:
			if s.preferredZNode == nil {
				continue
			}
			s.preferredZNode = nil
		case zkmeta.ReassignPartitionsPath:
			if s.reassignZNode == nil {
				continue
			}
			s.reassignZNode = nil
		default:
			name, ok := strings.CutPrefix(p, zkmeta.LogDirEventNotificationPath+"/")
			if !ok {
				break
			}
			if _, ok := s.logDirEvents[name]; !ok {
				continue
			}
			delete(s.logDirEvents, name)
		}
		fmt.Fprintf(s.out, "zk: delete %s\n", p)
	}
	return nil
}

func (s *fakeStore) GetPartitionStatesBatch(tps []zkmeta.TopicPartition) map[zkmeta.TopicPartition]zkmeta.PartitionStateResult {
	out := map[zkmeta.TopicPartition]zkmeta.PartitionStateResult{}
	for _, tp := range tps {
		st, err := s.GetPartitionState(tp.Topic, tp.Partition)
		out[tp] = zkmeta.PartitionStateResult{State: st, Err: err}
	}
	return out
}
