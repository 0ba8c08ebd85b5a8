package main

// reassign_log_dirs.go is the log-dir half of kafka-reassign-partitions.sh
// (ReassignPartitionsCommand's executeMoves, findLogDirMoveStates,
// replicaMoveStatesToString): a "log_dirs" entry other than "any" in the reassignment JSON
// moves that replica to that dir of its broker with AlterReplicaLogDirs, retried until the
// replica exists there or --timeout passes; --verify reports each move from DescribeLogDirs
// (current and future replica dirs); --cancel sends the moves in progress back to their
// current dir.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// anyLogDir is the log_dirs entry that leaves a replica's dir to its broker.
const anyLogDir = "any"

// replicaKey is Kafka's TopicPartitionReplica.
type replicaKey struct {
	topic     string
	partition int32
	broker    int32
}

// String is TopicPartitionReplica.toString: topic-partition-broker.
func (r replicaKey) String() string { return fmt.Sprintf("%s-%d-%d", r.topic, r.partition, r.broker) }

// sortReplicas is compareTopicPartitionReplicas: by broker, topic, partition.
func sortReplicas(rs []replicaKey) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.broker != b.broker {
			return a.broker < b.broker
		}
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		return a.partition < b.partition
	})
}

func joinReplicas(m map[replicaKey]string) string {
	rs := make([]replicaKey, 0, len(m))
	for r := range m {
		rs = append(rs, r)
	}
	sortReplicas(rs)
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ",")
}

// replicaLogDirs is the JSON's replica → dir map, "any" left out
// (parsePartitionReassignmentData's replicaAssignment).
func replicaLogDirs(entries []reassignEntry) map[replicaKey]string {
	out := map[replicaKey]string{}
	for _, e := range entries {
		for i, d := range e.LogDirs {
			if i < len(e.Replicas) && d != anyLogDir {
				out[replicaKey{e.Topic, e.Partition, e.Replicas[i]}] = d
			}
		}
	}
	return out
}

// movingBrokers is calculateMovingBrokers: the brokers with a log-dir move.
func movingBrokers(moves map[replicaKey]string) []int32 {
	seen := map[int32]bool{}
	for r := range moves {
		seen[r.broker] = true
	}
	return sortedIDs(seen)
}

// alterReplicaLogDirs is ReassignPartitionsCommand.alterReplicaLogDirs over the admin
// client's alterReplicaLogDirs (one request per broker): the replicas whose move started.
// REPLICA_NOT_AVAILABLE (not on the broker yet) is left for a later try; another error fails.
func alterReplicaLogDirs(ctx context.Context, cl *kgo.Client, moves map[replicaKey]string) (map[replicaKey]bool, error) {
	byBroker := map[int32]*kmsg.AlterReplicaLogDirsRequest{}
	for r, dir := range moves {
		req := byBroker[r.broker]
		if req == nil {
			req = kmsg.NewPtrAlterReplicaLogDirsRequest()
			byBroker[r.broker] = req
		}
		di := -1
		for i := range req.Dirs {
			if req.Dirs[i].Dir == dir {
				di = i
			}
		}
		if di < 0 {
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = dir
			req.Dirs = append(req.Dirs, d)
			di = len(req.Dirs) - 1
		}
		d := &req.Dirs[di]
		ti := -1
		for i := range d.Topics {
			if d.Topics[i].Topic == r.topic {
				ti = i
			}
		}
		if ti < 0 {
			t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			t.Topic = r.topic
			d.Topics = append(d.Topics, t)
			ti = len(d.Topics) - 1
		}
		d.Topics[ti].Partitions = append(d.Topics[ti].Partitions, r.partition)
	}
	done := map[replicaKey]bool{}
	for _, id := range sortedIDs(func() map[int32]bool {
		m := map[int32]bool{}
		for id := range byBroker {
			m[id] = true
		}
		return m
	}()) {
		kr, err := cl.Broker(int(id)).Request(ctx, byBroker[id])
		if err != nil {
			return nil, fmt.Errorf("alter replica log dirs on broker %d: %w", id, err)
		}
		resp := kr.(*kmsg.AlterReplicaLogDirsResponse)
		var failed []error
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				r := replicaKey{t.Topic, p.Partition, id}
				switch err := kerr.ErrorForCode(p.ErrorCode); {
				case err == nil:
					done[r] = true
				case errors.Is(err, kerr.ReplicaNotAvailable):
				default:
					failed = append(failed, fmt.Errorf("Failed to alter dir for %s\nCaused by: %v", r, err))
				}
			}
		}
		if len(failed) > 0 {
			return nil, failed[0]
		}
	}
	return done, nil
}

// executeMoves is ReassignPartitionsCommand.executeMoves: start every move, retrying each
// 100 ms those whose replica is not on its broker yet, until timeout.
func executeMoves(ctx context.Context, cl *kgo.Client, moves map[replicaKey]string, timeout time.Duration, stdout io.Writer) error {
	start := time.Now()
	pending := make(map[replicaKey]string, len(moves))
	for r, d := range moves {
		pending[r] = d
	}
	for {
		done, err := alterReplicaLogDirs(ctx, cl, pending)
		if err != nil {
			return err
		}
		if len(done) > 0 {
			started := map[replicaKey]string{}
			for r := range done {
				started[r] = ""
				delete(pending, r)
			}
			fmt.Fprintf(stdout, "Successfully started log directory move%s for: %s\n", plural(len(started)), joinReplicas(started))
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Since(start) >= timeout {
			return fmt.Errorf("Timed out before log directory move%s could be started for: %s", plural(len(pending)), joinReplicas(pending))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logDirMoveState is one replica's LogDirMoveState: its current and future dirs as
// DescribeLogDirs reports them ("" for none); missing when the broker did not answer for it.
type logDirMoveState struct {
	target, current, future string
	missing                 bool
}

// done is LogDirMoveState.done: completed or cancelled.
func (s logDirMoveState) done() bool { return !s.missing && s.current != "" && s.future == "" }

// findLogDirMoveStates is ReassignPartitionsCommand.findLogDirMoveStates over the admin
// client's describeReplicaLogDirs (DescribeLogDirs of the replicas, per broker).
func findLogDirMoveStates(ctx context.Context, cl *kgo.Client, moves map[replicaKey]string) (map[replicaKey]logDirMoveState, error) {
	byBroker := map[int32]*kmsg.DescribeLogDirsRequest{}
	for r := range moves {
		req := byBroker[r.broker]
		if req == nil {
			req = kmsg.NewPtrDescribeLogDirsRequest()
			byBroker[r.broker] = req
		}
		ti := -1
		for i := range req.Topics {
			if req.Topics[i].Topic == r.topic {
				ti = i
			}
		}
		if ti < 0 {
			t := kmsg.NewDescribeLogDirsRequestTopic()
			t.Topic = r.topic
			req.Topics = append(req.Topics, t)
			ti = len(req.Topics) - 1
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, r.partition)
	}
	out := map[replicaKey]logDirMoveState{}
	for r, target := range moves {
		out[r] = logDirMoveState{target: target, missing: true}
	}
	for id, req := range byBroker {
		kr, err := cl.Broker(int(id)).Request(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("describe log dirs of broker %d: %w", id, err)
		}
		resp := kr.(*kmsg.DescribeLogDirsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("describe log dirs of broker %d: %w", id, err)
		}
		for r, s := range out {
			if r.broker == id {
				s.missing = false // answered: a replica found in no live dir has no current dir
				out[r] = s
			}
		}
		for _, d := range resp.Dirs {
			if d.ErrorCode != 0 {
				continue // an offline dir lists nothing
			}
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					r := replicaKey{t.Topic, p.Partition, id}
					s, ok := out[r]
					if !ok {
						continue
					}
					if p.IsFuture {
						s.future = d.Dir
					} else {
						s.current = d.Dir
					}
					out[r] = s
				}
			}
		}
	}
	return out, nil
}

// replicaMoveStatesToString is ReassignPartitionsCommand.replicaMoveStatesToString.
func replicaMoveStatesToString(states map[replicaKey]logDirMoveState) string {
	rs := make([]replicaKey, 0, len(states))
	for r := range states {
		rs = append(rs, r)
	}
	sortReplicas(rs)
	var lines []string
	for _, r := range rs {
		s := states[r]
		tp := fmt.Sprintf("%s-%d", r.topic, r.partition)
		switch {
		case s.missing:
			lines = append(lines, fmt.Sprintf("Partition %s cannot be found in any live log directory on broker %d.", tp, r.broker))
		case s.current == "":
			lines = append(lines, fmt.Sprintf("Partition %s is not found in any live log dir on broker %d. There is likely an offline log directory on the broker.", tp, r.broker))
		case s.future != "" && s.future == s.target:
			lines = append(lines, fmt.Sprintf("Reassignment of replica %s is still in progress.", r))
		case s.future != "":
			lines = append(lines, fmt.Sprintf("Partition %s on broker %d is being moved to log dir %s instead of %s.", tp, r.broker, s.future, s.target))
		case s.current == s.target:
			lines = append(lines, fmt.Sprintf("Reassignment of replica %s completed successfully.", r))
		default:
			lines = append(lines, fmt.Sprintf("Partition %s on broker %d is not being moved from log dir %s to %s.", tp, r.broker, s.current, s.target))
		}
	}
	return strings.Join(lines, "\n")
}

// verifyReplicaMoves prints the moves' states and reports whether any is still going.
func verifyReplicaMoves(ctx context.Context, cl *kgo.Client, moves map[replicaKey]string, stdout io.Writer) (bool, error) {
	states, err := findLogDirMoveStates(ctx, cl, moves)
	if err != nil {
		return false, err
	}
	fmt.Fprintln(stdout, replicaMoveStatesToString(states))
	for _, s := range states {
		if !s.done() {
			return true, nil
		}
	}
	return false, nil
}

// cancelReplicaMoves is the log-dir part of cancelAssignment: each move in progress goes
// back to its current dir.
func cancelReplicaMoves(ctx context.Context, cl *kgo.Client, moves map[replicaKey]string, timeout time.Duration, stdout io.Writer) error {
	states, err := findLogDirMoveStates(ctx, cl, moves)
	if err != nil {
		return err
	}
	back := map[replicaKey]string{}
	for r, s := range states {
		if !s.missing && s.current != "" && s.future != "" {
			back[r] = s.current
		}
	}
	if len(back) == 0 {
		fmt.Fprint(stdout, "None of the specified partition moves are active.")
		return nil
	}
	return executeMoves(ctx, cl, back, timeout, stdout)
}
