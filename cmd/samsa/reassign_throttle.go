package main

// reassign_throttle.go is ReassignPartitionsCommand's throttle handling: --execute --throttle
// sets the topic-level throttled replica lists (leader: every source replica, follower:
// every destination that is not a source) and the per-broker leader and follower rates on
// every broker taking part; --verify (once no reassignment is left) and --cancel clear them
// again on every broker and the topics of the JSON, unless --preserve-throttles.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The configs ReassignPartitionsCommand sets and clears.
const (
	brokerLeaderThrottle   = "leader.replication.throttled.rate"
	brokerFollowerThrottle = "follower.replication.throttled.rate"
	brokerLogDirThrottle   = "replica.alter.log.dirs.io.max.bytes.per.second"
	topicLeaderThrottle    = "leader.replication.throttled.replicas"
	topicFollowerThrottle  = "follower.replication.throttled.replicas"
)

var (
	brokerLevelThrottles = []string{brokerLeaderThrottle, brokerFollowerThrottle, brokerLogDirThrottle}
	topicLevelThrottles  = []string{topicLeaderThrottle, topicFollowerThrottle}
)

// partitionMove is ReassignPartitionsCommand.PartitionMove: where a partition's data comes
// from and goes to.
type partitionMove struct {
	sources, destinations map[int32]bool
}

func idSet(ids []int32) map[int32]bool {
	m := make(map[int32]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func sortedIDs(m map[int32]bool) []int32 {
	out := make([]int32, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// proposedMoveMap is calculateProposedMoveMap: the moves of every reassignment already in
// progress (sources = replicas - adding, destinations = adding), then each proposed one
// (sources = an ongoing move's sources or the current replicas, destinations = the target
// minus the sources).
func proposedMoveMap(active map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition, activeTopics map[string]string,
	entries []reassignEntry, cur map[string]map[int32][]int32) map[string]map[int32]*partitionMove {
	moves := map[string]map[int32]*partitionMove{}
	put := func(topic string, p int32, m *partitionMove) {
		if moves[topic] == nil {
			moves[topic] = map[int32]*partitionMove{}
		}
		moves[topic][p] = m
	}
	for name, r := range active {
		src := idSet(r.Replicas)
		for _, a := range r.AddingReplicas {
			delete(src, a)
		}
		put(activeTopics[name], r.Partition, &partitionMove{sources: src, destinations: idSet(r.AddingReplicas)})
	}
	for _, e := range entries {
		var src map[int32]bool
		if m, ok := moves[e.Topic][e.Partition]; ok {
			src = m.sources
		} else {
			src = idSet(cur[e.Topic][e.Partition])
		}
		dst := idSet(e.Replicas)
		for s := range src {
			delete(dst, s)
		}
		put(e.Topic, e.Partition, &partitionMove{sources: src, destinations: dst})
	}
	return moves
}

// throttleLists are calculateLeaderThrottles and calculateFollowerThrottles: per topic,
// "partition:broker" of every source (leader) and every new destination (follower), sorted
// as strings like Kafka's TreeSet.
func throttleLists(moves map[string]map[int32]*partitionMove) (leader, follower map[string]string) {
	leader, follower = map[string]string{}, map[string]string{}
	for topic, parts := range moves {
		var l, f []string
		for p, m := range parts {
			for s := range m.sources {
				l = append(l, fmt.Sprintf("%d:%d", p, s))
			}
			for d := range m.destinations {
				if !m.sources[d] {
					f = append(f, fmt.Sprintf("%d:%d", p, d))
				}
			}
		}
		sort.Strings(l)
		sort.Strings(f)
		leader[topic], follower[topic] = strings.Join(l, ","), strings.Join(f, ",")
	}
	return leader, follower
}

// reassigningBrokers is calculateReassigningBrokers: every source and destination.
func reassigningBrokers(moves map[string]map[int32]*partitionMove) []int32 {
	all := map[int32]bool{}
	for _, parts := range moves {
		for _, m := range parts {
			for id := range m.sources {
				all[id] = true
			}
			for id := range m.destinations {
				all[id] = true
			}
		}
	}
	return sortedIDs(all)
}

// configOp is one IncrementalAlterConfigs operation; value nil deletes.
type configOp struct {
	name  string
	value *string
}

type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
	ops  []configOp
}

// incrementalAlterConfigs sends the resources (kgo routes a broker's resource to that
// broker, as the admin client does) and fails with the first resource error, as
// all().get() does.
func incrementalAlterConfigs(ctx context.Context, cl *kgo.Client, resources []configResource) error {
	if len(resources) == 0 {
		return nil
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range resources {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		for _, op := range r.ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = op.name, op.value
			c.Op = kmsg.IncrementalAlterConfigOpSet
			if op.value == nil {
				c.Op = kmsg.IncrementalAlterConfigOpDelete
			}
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

// modifyReassignmentThrottle sets the topic lists, then the rate on every broker involved
// (modifyTopicThrottles + modifyInterBrokerThrottle).
func modifyReassignmentThrottle(ctx context.Context, cl *kgo.Client, moves map[string]map[int32]*partitionMove, rate int64, stdout io.Writer) error {
	leader, follower := throttleLists(moves)
	var topics []configResource
	for _, t := range sortedKeysStr(moves) {
		l, f := leader[t], follower[t]
		topics = append(topics, configResource{typ: kmsg.ConfigResourceTypeTopic, name: t,
			ops: []configOp{{topicLeaderThrottle, &l}, {topicFollowerThrottle, &f}}})
	}
	if err := incrementalAlterConfigs(ctx, cl, topics); err != nil {
		return err
	}
	v := strconv.FormatInt(rate, 10)
	var brokers []configResource
	for _, id := range reassigningBrokers(moves) {
		brokers = append(brokers, configResource{typ: kmsg.ConfigResourceTypeBroker, name: strconv.Itoa(int(id)),
			ops: []configOp{{brokerLeaderThrottle, &v}, {brokerFollowerThrottle, &v}}})
	}
	if err := incrementalAlterConfigs(ctx, cl, brokers); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "The inter-broker throttle limit was set to %d B/s\n", rate)
	return nil
}

// modifyLogDirThrottle sets replica.alter.log.dirs.io.max.bytes.per.second on the brokers
// with a log-dir move (none: only the message is printed, as Kafka does).
func modifyLogDirThrottle(ctx context.Context, cl *kgo.Client, moving []int32, rate int64, stdout io.Writer) error {
	v := strconv.FormatInt(rate, 10)
	var brokers []configResource
	for _, id := range moving {
		brokers = append(brokers, configResource{typ: kmsg.ConfigResourceTypeBroker, name: strconv.Itoa(int(id)),
			ops: []configOp{{brokerLogDirThrottle, &v}}})
	}
	if err := incrementalAlterConfigs(ctx, cl, brokers); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "The replica-alter-dir throttle limit was set to %d B/s\n", rate)
	return nil
}

// clearAllThrottles deletes the broker-level throttles on every live broker and every
// broker of the JSON, then the topic-level ones on the JSON's topics.
func clearAllThrottles(ctx context.Context, cl *kgo.Client, entries []reassignEntry, stdout io.Writer) error {
	// describeCluster().nodes(): a Metadata request for no topics.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Topics = []kmsg.MetadataRequestTopic{}
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	brokers := map[int32]bool{}
	for _, b := range mresp.Brokers {
		brokers[b.NodeID] = true
	}
	for _, e := range entries {
		for _, r := range e.Replicas {
			brokers[r] = true
		}
	}
	ids := sortedIDs(brokers)
	fmt.Fprintf(stdout, "Clearing broker-level throttles on broker%s %s\n", plural(len(ids)), joinIDs(ids))
	var bres []configResource
	for _, id := range ids {
		r := configResource{typ: kmsg.ConfigResourceTypeBroker, name: strconv.Itoa(int(id))}
		for _, k := range brokerLevelThrottles {
			r.ops = append(r.ops, configOp{name: k})
		}
		bres = append(bres, r)
	}
	if err := incrementalAlterConfigs(ctx, cl, bres); err != nil {
		return err
	}
	topics := topicsOf(entries)
	fmt.Fprintf(stdout, "Clearing topic-level throttles on topic%s %s\n", plural(len(topics)), strings.Join(topics, ","))
	var tres []configResource
	for _, t := range topics {
		r := configResource{typ: kmsg.ConfigResourceTypeTopic, name: t}
		for _, k := range topicLevelThrottles {
			r.ops = append(r.ops, configOp{name: k})
		}
		tres = append(tres, r)
	}
	return incrementalAlterConfigs(ctx, cl, tres)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
