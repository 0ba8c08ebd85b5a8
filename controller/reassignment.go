package controller

// Partition reassignment: KafkaController.onPartitionReassignment and its callers (Kafka 3.7),
// started by AlterPartitionReassignments (API 45) or the legacy /admin/reassign_partitions
// znode. With RS = replicas, ORS = origin, TRS = target, AR = TRS−ORS, RR = ORS−TRS:
//   1. RS = TRS + (ORS−TRS), AR and RR are written to the topic znode (adding_replicas,
//      removing_replicas); replicas dropped by a changed or cancelled reassignment are stopped.
//   2. Until TRS ⊆ ISR: the leader epoch is bumped and LeaderAndIsr goes to RS (AR as new
//      replicas). Leaders grow the ISR with AlterPartition; each change of a reassigning
//      partition's ISR re-runs the check (PartitionReassignmentIsrChange).
//   3. Then RS = TRS: a leader not in TRS (or dead) is replaced by the first live TRS member
//      in the ISR (else the epoch is bumped), RR leave the ISR and get StopReplica(delete),
//      the topic znode loses AR/RR, the partition leaves /admin/reassign_partitions, and every
//      broker gets UpdateMetadata.
// The state lives in the topic znode, so a new controller resumes every partition with AR or
// RR at failover, and a broker coming back resumes those with a replica on it.
// Deviation: replicas named in /admin/reassign_partitions are validated as API requests are
// (Kafka skips that for the znode); invalid entries are logged and removed from the znode.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// replicaAssignment is Kafka's ReplicaAssignment: RS with its adding and removing replicas.
type replicaAssignment struct {
	replicas, adding, removing []int32
}

func diffReplicas(a, b []int32) []int32 {
	var out []int32
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

func (a replicaAssignment) origin() []int32       { return diffReplicas(a.replicas, a.adding) }
func (a replicaAssignment) target() []int32       { return diffReplicas(a.replicas, a.removing) }
func (a replicaAssignment) beingReassigned() bool { return len(a.adding) > 0 || len(a.removing) > 0 }

// reassignTo is ReplicaAssignment.reassignTo: RS = target followed by origin replicas not in it.
func (a replicaAssignment) reassignTo(target []int32) replicaAssignment {
	origin := a.origin()
	full := slices.Clone(target)
	for _, r := range origin {
		if !slices.Contains(full, r) {
			full = append(full, r)
		}
	}
	return replicaAssignment{replicas: full, adding: diffReplicas(full, origin), removing: diffReplicas(full, target)}
}

func (a replicaAssignment) equal(b replicaAssignment) bool {
	return slices.Equal(a.replicas, b.replicas) && slices.Equal(a.adding, b.adding) && slices.Equal(a.removing, b.removing)
}

func (c *controllerContext) fullAssignment(tp TopicPartition) replicaAssignment {
	t := c.topics[tp.Topic]
	if t == nil {
		return replicaAssignment{}
	}
	return replicaAssignment{replicas: slices.Clone(t.assignment[tp.Partition]),
		adding: slices.Clone(t.adding[tp.Partition]), removing: slices.Clone(t.removing[tp.Partition])}
}

func (c *controllerContext) setFullAssignment(tp TopicPartition, a replicaAssignment) {
	t := c.topics[tp.Topic]
	if t == nil {
		return
	}
	t.assignment[tp.Partition] = slices.Clone(a.replicas)
	if t.adding == nil {
		t.adding = map[int32][]int32{}
	}
	if t.removing == nil {
		t.removing = map[int32][]int32{}
	}
	if len(a.adding) > 0 {
		t.adding[tp.Partition] = slices.Clone(a.adding)
	} else {
		delete(t.adding, tp.Partition)
	}
	if len(a.removing) > 0 {
		t.removing[tp.Partition] = slices.Clone(a.removing)
	} else {
		delete(t.removing, tp.Partition)
	}
}

// reassignmentError is a per-partition ApiError.
type reassignmentError struct {
	code int16
	msg  string
}

var errPartitionMissing = &reassignmentError{kerr.UnknownTopicOrPartition.Code, "The partition does not exist."}

type (
	// apiPartitionReassignmentEvent: AlterPartitionReassignments; a nil target cancels.
	apiPartitionReassignmentEvent struct {
		targets map[TopicPartition][]int32
		cancel  map[TopicPartition]bool
		reply   chan map[TopicPartition]*reassignmentError
	}
	// listPartitionReassignmentsEvent: ListPartitionReassignments (nil filter: all).
	listPartitionReassignmentsEvent struct {
		filter []TopicPartition
		reply  chan map[TopicPartition]replicaAssignment
	}
	// zkPartitionReassignmentEvent: /admin/reassign_partitions was created.
	zkPartitionReassignmentEvent struct{}
	// partitionReassignmentIsrChangeEvent: the ISR of a reassigning partition changed.
	partitionReassignmentIsrChangeEvent struct{ tp TopicPartition }
)

func (apiPartitionReassignmentEvent) String() string       { return "ApiPartitionReassignment" }
func (listPartitionReassignmentsEvent) String() string     { return "ListPartitionReassignments" }
func (zkPartitionReassignmentEvent) String() string        { return "ZkPartitionReassignment" }
func (partitionReassignmentIsrChangeEvent) String() string { return "PartitionReassignmentIsrChange" }

// enqueue puts ev on the active term's queue and returns the loop, or nil when not active.
func (c *Controller) activeLoop() *eventLoop {
	c.mu.Lock()
	loop := c.mu.loop
	c.mu.Unlock()
	if loop == nil || !c.IsActive() {
		return nil
	}
	return loop
}

// askLoop queues the event mk builds on the active term's loop and waits for its reply.
// code is non-zero when there is no reply: notActive when no term is active or the term
// ended before answering, REQUEST_TIMED_OUT when ctx ends first.
func askLoop[R any](ctx context.Context, c *Controller, notActive int16, mk func(reply chan R) event) (resp R, code int16) {
	loop := c.activeLoop()
	if loop == nil {
		return resp, notActive
	}
	reply := make(chan R, 1)
	loop.queue.put(mk(reply))
	select {
	case resp = <-reply:
		return resp, 0
	case <-loop.done:
		select {
		case resp = <-reply:
			return resp, 0
		default:
			return resp, notActive
		}
	case <-ctx.Done():
		return resp, kerr.RequestTimedOut.Code
	}
}

// AlterPartitionReassignments serves API 45 on the controller (KafkaController.alterPartitionReassignments).
func (c *Controller) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	ev := apiPartitionReassignmentEvent{targets: map[TopicPartition][]int32{}, cancel: map[TopicPartition]bool{},
		reply: make(chan map[TopicPartition]*reassignmentError, 1)}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{t.Topic, p.Partition}
			if p.Replicas == nil {
				ev.cancel[tp] = true
			} else {
				ev.targets[tp] = slices.Clone(p.Replicas)
			}
		}
	}
	var results map[TopicPartition]*reassignmentError
	code := int16(0)
	if loop := c.activeLoop(); loop == nil {
		code = notControllerCode
	} else {
		loop.queue.put(ev)
		select {
		case results = <-ev.reply:
		case <-loop.done:
			select {
			case results = <-ev.reply:
			default:
				code = notControllerCode
			}
		case <-ctx.Done():
			code = kerr.RequestTimedOut.Code
		}
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if e := results[TopicPartition{t.Topic, p.Partition}]; e != nil {
				rp.ErrorCode = e.code
				if e.msg != "" {
					m := e.msg
					rp.ErrorMessage = &m
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ListPartitionReassignments serves API 46 on the controller.
func (c *Controller) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	ev := listPartitionReassignmentsEvent{reply: make(chan map[TopicPartition]replicaAssignment, 1)}
	if req.Topics != nil {
		ev.filter = []TopicPartition{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				ev.filter = append(ev.filter, TopicPartition{t.Topic, p})
			}
		}
	}
	loop := c.activeLoop()
	if loop == nil {
		resp.ErrorCode = notControllerCode
		return resp
	}
	loop.queue.put(ev)
	var res map[TopicPartition]replicaAssignment
	select {
	case res = <-ev.reply:
	case <-loop.done:
		resp.ErrorCode = notControllerCode
		return resp
	case <-ctx.Done():
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	}
	idx := map[string]int{}
	for _, tp := range sortedTPs(res) {
		a := res[tp]
		i, ok := idx[tp.Topic]
		if !ok {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = tp.Topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			idx[tp.Topic] = i
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas = tp.Partition, a.replicas
		p.AddingReplicas, p.RemovingReplicas = a.adding, a.removing
		if p.AddingReplicas == nil {
			p.AddingReplicas = []int32{}
		}
		if p.RemovingReplicas == nil {
			p.RemovingReplicas = []int32{}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp
}

func (l *eventLoop) onListPartitionReassignments(filter []TopicPartition) map[TopicPartition]replicaAssignment {
	out := map[TopicPartition]replicaAssignment{}
	consider := filter
	if consider == nil {
		consider = sortedTPs(l.ctx.partitionsReassigning)
	}
	for _, tp := range consider {
		if !l.ctx.partitionsReassigning[tp] {
			continue
		}
		if a := l.ctx.fullAssignment(tp); a.beingReassigned() {
			out[tp] = a
		}
	}
	return out
}

// validateReplicas is KafkaController.validateReplicas.
func (l *eventLoop) validateReplicas(tp TopicPartition, replicas []int32) *reassignmentError {
	if len(replicas) == 0 {
		return &reassignmentError{kerr.InvalidReplicaAssignment.Code, "Empty replica list specified in partition reassignment."}
	}
	seen := map[int32]bool{}
	for _, r := range replicas {
		if seen[r] {
			return &reassignmentError{kerr.InvalidReplicaAssignment.Code, "Duplicate replica ids in partition reassignment replica list: " + fmtIDs(replicas)}
		}
		seen[r] = true
		if r < 0 {
			return &reassignmentError{kerr.InvalidReplicaAssignment.Code, "Invalid broker id in replica list: " + fmtIDs(replicas)}
		}
	}
	if l.ctx.topics[tp.Topic] == nil || l.ctx.topics[tp.Topic].assignment[tp.Partition] == nil {
		return errPartitionMissing
	}
	next := l.ctx.fullAssignment(tp).reassignTo(replicas)
	for _, r := range next.adding {
		if !l.ctx.isLive(r) {
			return &reassignmentError{kerr.InvalidReplicaAssignment.Code, "Replica assignment has brokers that are not alive. Replica list: " +
				fmtIDs(next.adding) + ", live broker list: " + fmtIDs(l.liveBrokerIDs())}
		}
	}
	return nil
}

func (l *eventLoop) liveBrokerIDs() []int32 {
	var out []int32
	for _, id := range l.ctx.liveOrShuttingDownBrokerIDs() {
		if l.ctx.isLive(id) {
			out = append(out, id)
		}
	}
	return out
}

func fmtIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// maybeBuildReassignment: a cancel (nil target) of a partition not being reassigned is nil.
func (l *eventLoop) maybeBuildReassignment(tp TopicPartition, target []int32, cancel bool) (replicaAssignment, bool) {
	cur := l.ctx.fullAssignment(tp)
	if cur.beingReassigned() || l.ctx.partitionsReassigning[tp] {
		if cancel {
			target = cur.origin()
		}
		return cur.reassignTo(target), true
	}
	if cancel {
		return replicaAssignment{}, false
	}
	return cur.reassignTo(target), true
}

// onApiPartitionReassignment is processApiPartitionReassignment.
func (l *eventLoop) onApiPartitionReassignment(e apiPartitionReassignmentEvent) (map[TopicPartition]*reassignmentError, error) {
	results := map[TopicPartition]*reassignmentError{}
	toReassign := map[TopicPartition]replicaAssignment{}
	all := map[TopicPartition]bool{}
	for tp := range e.targets {
		all[tp] = true
	}
	for tp := range e.cancel {
		all[tp] = true
	}
	for _, tp := range sortedTPs(all) {
		if !e.cancel[tp] {
			if err := l.validateReplicas(tp, e.targets[tp]); err != nil {
				results[tp] = err
				continue
			}
		} else if l.ctx.topics[tp.Topic] == nil || l.ctx.topics[tp.Topic].assignment[tp.Partition] == nil {
			results[tp] = errPartitionMissing
			continue
		}
		ra, ok := l.maybeBuildReassignment(tp, e.targets[tp], e.cancel[tp])
		if !ok {
			results[tp] = &reassignmentError{code: kerr.NoReassignmentInProgress.Code}
			continue
		}
		toReassign[tp] = ra
	}
	// The latest reassignment wins: drop these partitions from the legacy znode.
	if err := l.removeFromZkReassignment(func(tp TopicPartition) bool { _, ok := toReassign[tp]; return ok }); err != nil {
		return nil, err
	}
	res, err := l.triggerPartitionReassignment(toReassign)
	for tp, r := range res {
		results[tp] = r
	}
	return results, err
}

// triggerPartitionReassignment is maybeTriggerPartitionReassignment.
func (l *eventLoop) triggerPartitionReassignment(toReassign map[TopicPartition]replicaAssignment) (map[TopicPartition]*reassignmentError, error) {
	results := map[TopicPartition]*reassignmentError{}
	for _, tp := range sortedTPs(toReassign) {
		if l.ctx.topicsToDelete[tp.Topic] {
			results[tp] = errPartitionMissing
			continue
		}
		if len(l.ctx.replicas(tp)) == 0 {
			results[tp] = errPartitionMissing
			continue
		}
		if err := l.onPartitionReassignment(tp, toReassign[tp]); err != nil {
			if isFatal(err) {
				return results, err
			}
			l.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Error("reassignment failed")
			results[tp] = &reassignmentError{code: kerr.UnknownServerError.Code}
			continue
		}
		results[tp] = nil
	}
	return results, nil
}

// onPartitionReassignment is KafkaController.onPartitionReassignment.
func (l *eventLoop) onPartitionReassignment(tp TopicPartition, ra replicaAssignment) error {
	log := l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition})
	// updateCurrentReassignment
	cur := l.ctx.fullAssignment(tp)
	if !cur.equal(ra) {
		l.ctx.setFullAssignment(tp, ra)
		if err := l.writeTopicAssignment(tp.Topic); err != nil {
			l.ctx.setFullAssignment(tp, cur)
			return err
		}
		log.WithFields(logrus.Fields{"replicas": ra.replicas, "adding": ra.adding, "removing": ra.removing}).Info("reassignment updated")
		if unneeded := diffReplicas(cur.replicas, ra.replicas); len(unneeded) > 0 {
			if err := l.stopRemovedReplicas(tp, unneeded); err != nil {
				return err
			}
		}
	}
	l.ctx.partitionsReassigning[tp] = true

	if err := l.refreshPartitionStates([]TopicPartition{tp}); err != nil {
		return err
	}
	st, ok := l.ctx.partitionLeadership[tp]
	complete := ok && isSubset(ra.target(), st.ISR)
	if !complete {
		// A1/A2: bump the leader epoch, LeaderAndIsr to RS; AR start as new replicas.
		b := newRequestBatch()
		if err := l.bumpLeaderEpoch(tp, ra.replicas, "reassignment started", b); err != nil {
			return err
		}
		b.addLeaderAndIsr(l.ctx, ra.adding, tp, true)
		l.sendBatch(b)
		return nil
	}
	// B1-B8.
	done := replicaAssignment{replicas: ra.target()}
	l.ctx.setFullAssignment(tp, done)
	b := newRequestBatch()
	if !slices.Contains(done.replicas, st.Leader) || !l.ctx.isReplicaOnline(st.Leader, tp) {
		if err := l.electReassignLeader(tp, b); err != nil {
			return err
		}
	} else if err := l.bumpLeaderEpoch(tp, done.replicas, "reassignment completing", b); err != nil {
		return err
	}
	l.sendBatch(b)
	if len(ra.removing) > 0 {
		if err := l.stopRemovedReplicas(tp, ra.removing); err != nil {
			return err
		}
	}
	if err := l.writeTopicAssignment(tp.Topic); err != nil {
		return err
	}
	delete(l.ctx.partitionsReassigning, tp)
	delete(l.ctx.zkReassigning, tp)
	if err := l.removeFromZkReassignment(func(x TopicPartition) bool { return x == tp }); err != nil {
		return err
	}
	b = newRequestBatch()
	b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), []TopicPartition{tp})
	l.sendBatch(b)
	log.WithField("replicas", done.replicas).Info("reassignment completed")
	if l.ctx.topicsToDelete[tp.Topic] {
		return l.resumeDeletions()
	}
	return nil
}

func isSubset(a, b []int32) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// writeTopicAssignment writes the topic znode from the context (RS, AR, RR), fenced.
func (l *eventLoop) writeTopicAssignment(topic string) error {
	t := l.ctx.topics[topic]
	if t == nil {
		return zkmeta.ErrNoNode
	}
	a := zkmeta.TopicAssignment{TopicID: t.id, Partitions: t.assignment, Adding: t.adding, Removing: t.removing}
	v, err := l.zk.SetTopicAssignmentAsController(topic, a, l.ctx.epochZkVersion)
	if err != nil {
		return err
	}
	t.zkVersion = v
	return nil
}

// bumpLeaderEpoch is updateLeaderEpochAndSendRequest: leader epoch + 1, LeaderAndIsr to recipients.
func (l *eventLoop) bumpLeaderEpoch(tp TopicPartition, recipients []int32, why string, b *requestBatch) error {
	tps := []TopicPartition{tp}
	for attempt := 0; len(tps) > 0 && attempt < maxElectionAttempts; attempt++ {
		if attempt > 0 {
			if err := l.refreshPartitionStates(tps); err != nil {
				return err
			}
		}
		st, ok := l.ctx.partitionLeadership[tp]
		if !ok || st.ControllerEpoch > l.ctx.epoch {
			return nil
		}
		next := st
		next.LeaderEpoch++
		next.ControllerEpoch = l.ctx.epoch
		retry, err := l.applyUpdates([]partitionUpdate{{tp: tp, state: next, recipients: slices.Clone(recipients),
			after: l.ctx.partitionStates[tp], why: why}}, b)
		if err != nil {
			return err
		}
		tps = retry
	}
	return nil
}

// electReassignLeader runs the reassign election (first live TRS replica in the ISR).
func (l *eventLoop) electReassignLeader(tp TopicPartition, b *requestBatch) error {
	tps := []TopicPartition{tp}
	for attempt := 0; len(tps) > 0 && attempt < maxElectionAttempts; attempt++ {
		if attempt > 0 {
			if err := l.refreshPartitionStates(tps); err != nil {
				return err
			}
		}
		st, ok := l.ctx.partitionLeadership[tp]
		if !ok {
			return nil
		}
		res, ok := reassignPartitionLeaderElection(l.ctx.replicas(tp), st.ISR, l.ctx.onlineFor(tp))
		if !ok {
			l.stateLog.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).
				Error("no target replica is live and in the ISR; reassignment leader election failed")
			return nil
		}
		next := st
		next.Leader, next.ISR = res.Leader, res.ISR
		next.LeaderEpoch++
		next.ControllerEpoch = l.ctx.epoch
		retry, err := l.applyUpdates([]partitionUpdate{{tp: tp, state: next, recipients: l.ctx.replicas(tp),
			after: OnlinePartition, why: "reassign partition leader election"}}, b)
		if err != nil {
			return err
		}
		tps = retry
	}
	return nil
}

// stopRemovedReplicas is stopRemovedReplicasOfReassignedPartition: OfflineReplica (out of the
// ISR) then deletion (StopReplica delete=true).
func (l *eventLoop) stopRemovedReplicas(tp TopicPartition, removed []int32) error {
	for _, r := range removed {
		if err := l.removeReplicaFromISRs(r, []TopicPartition{tp}); err != nil {
			return err
		}
	}
	b := newRequestBatch()
	b.addStopReplica(l.ctx, removed, tp, true)
	l.sendBatch(b)
	return nil
}

// onPartitionReassignmentIsrChange is processPartitionReassignmentIsrChange.
func (l *eventLoop) onPartitionReassignmentIsrChange(tp TopicPartition) error {
	if !l.ctx.partitionsReassigning[tp] {
		return nil
	}
	ra := l.ctx.fullAssignment(tp)
	if err := l.refreshPartitionStates([]TopicPartition{tp}); err != nil {
		return err
	}
	st, ok := l.ctx.partitionLeadership[tp]
	if !ok || !isSubset(ra.target(), st.ISR) {
		return nil
	}
	return l.onPartitionReassignment(tp, ra)
}

// ---- legacy znode ----

// watchZkReassignment arms the existence watch on /admin/reassign_partitions.
func (l *eventLoop) watchZkReassignment() (bool, error) {
	ok, ch, err := l.zk.ExistsW(zkmeta.ReassignPartitionsPath)
	if err != nil {
		return false, err
	}
	l.watch(ch, zkPartitionReassignmentEvent{})
	return ok, nil
}

// onZkPartitionReassignment is processZkPartitionReassignment; returns the partitions started.
func (l *eventLoop) onZkPartitionReassignment() (map[TopicPartition]bool, error) {
	exists, err := l.watchZkReassignment()
	if err != nil || !exists {
		return nil, err
	}
	entries, err := l.zk.GetReassignment()
	if errors.Is(err, zkmeta.ErrNoNode) {
		return nil, nil
	}
	if errors.Is(err, zkmeta.ErrBadJSON) {
		l.log.WithError(err).WithField("zk_path", zkmeta.ReassignPartitionsPath).Error("malformed reassignment znode; deleting it")
		return nil, l.zk.SetReassignmentAsController(nil, l.ctx.epochZkVersion)
	}
	if err != nil {
		return nil, err
	}
	failed := map[TopicPartition]*reassignmentError{}
	toReassign := map[TopicPartition]replicaAssignment{}
	for _, e := range entries {
		tp := TopicPartition{e.Topic, e.Partition}
		if verr := l.validateReplicas(tp, e.Replicas); verr != nil {
			failed[tp] = verr
			continue
		}
		ra, _ := l.maybeBuildReassignment(tp, e.Replicas, false)
		toReassign[tp] = ra
	}
	res, err := l.triggerPartitionReassignment(toReassign)
	if err != nil {
		return nil, err
	}
	started := map[TopicPartition]bool{}
	for tp, r := range res {
		if r != nil {
			failed[tp] = r
		} else {
			started[tp] = true
			if l.ctx.partitionsReassigning[tp] {
				l.ctx.zkReassigning[tp] = true
			}
		}
	}
	if len(failed) > 0 {
		for _, tp := range sortedTPs(failed) {
			l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "error_code": failed[tp].code,
				"reason": failed[tp].msg}).Warn("rejected reassignment from zookeeper; removing it from the znode")
		}
		if err := l.removeFromZkReassignment(func(tp TopicPartition) bool { return failed[tp] != nil }); err != nil {
			return nil, err
		}
	}
	return started, nil
}

// removeFromZkReassignment is maybeRemoveFromZkReassignment: rewrite the znode without the
// matching partitions (delete it when empty).
func (l *eventLoop) removeFromZkReassignment(drop func(TopicPartition) bool) error {
	entries, err := l.zk.GetReassignment()
	if errors.Is(err, zkmeta.ErrNoNode) {
		return nil
	}
	if errors.Is(err, zkmeta.ErrBadJSON) {
		return l.zk.SetReassignmentAsController(nil, l.ctx.epochZkVersion)
	}
	if err != nil {
		return err
	}
	var keep []zkmeta.ReassignmentEntry
	for _, e := range entries {
		if !drop(TopicPartition{e.Topic, e.Partition}) {
			keep = append(keep, e)
		}
	}
	if len(keep) == len(entries) {
		return nil
	}
	return l.zk.SetReassignmentAsController(keep, l.ctx.epochZkVersion)
}

// initializePartitionReassignments runs at failover: new znode entries first, then every
// partition whose topic znode still has AR or RR resumes.
func (l *eventLoop) initializePartitionReassignments() error {
	started, err := l.onZkPartitionReassignment()
	if err != nil {
		return err
	}
	for _, tp := range l.ctx.allPartitions() {
		if started[tp] {
			continue
		}
		if ra := l.ctx.fullAssignment(tp); ra.beingReassigned() {
			l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Info("resuming reassignment")
			if err := l.onPartitionReassignment(tp, ra); err != nil {
				if isFatal(err) {
					return err
				}
				l.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Error("resuming reassignment failed")
			}
		}
	}
	return nil
}

// resumeReassignmentsOn restarts reassignments with a replica on brokers that just started.
func (l *eventLoop) resumeReassignmentsOn(started []int32) error {
	for _, tp := range sortedTPs(l.ctx.partitionsReassigning) {
		ra := l.ctx.fullAssignment(tp)
		if !slices.ContainsFunc(ra.replicas, func(r int32) bool { return slices.Contains(started, r) }) {
			continue
		}
		if err := l.onPartitionReassignment(tp, ra); err != nil && isFatal(err) {
			return err
		}
	}
	return nil
}
