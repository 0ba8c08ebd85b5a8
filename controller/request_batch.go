package controller

// This file mirrors kafka.controller.AbstractControllerBrokerRequestBatch (Kafka 3.7): a state
// change collects LeaderAndIsr per broker, UpdateMetadata for all live brokers and StopReplica
// per broker; at the end of the change they are built from the controller context and queued,
// one queue per broker.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// requestBatch collects the requests of one state change. Used by the event loop goroutine only.
type requestBatch struct {
	leaderAndIsr map[int32]map[TopicPartition]bool // broker → partition → isNew
	umBrokers    map[int32]bool
	umPartitions map[TopicPartition]bool
	stopReplica  map[int32]map[TopicPartition]bool // broker → partition → deletePartition
}

func newRequestBatch() *requestBatch {
	return &requestBatch{
		leaderAndIsr: map[int32]map[TopicPartition]bool{},
		umBrokers:    map[int32]bool{},
		umPartitions: map[TopicPartition]bool{},
		stopReplica:  map[int32]map[TopicPartition]bool{},
	}
}

func (b *requestBatch) empty() bool {
	return len(b.leaderAndIsr) == 0 && len(b.umBrokers) == 0 && len(b.stopReplica) == 0
}

// addLeaderAndIsr is addLeaderAndIsrRequestForBrokers: LeaderAndIsr for tp to the given live
// brokers, and UpdateMetadata for tp to every live broker.
func (b *requestBatch) addLeaderAndIsr(c *controllerContext, brokers []int32, tp TopicPartition, isNew bool) {
	for _, id := range brokers {
		if id < 0 || !c.isRegistered(id) {
			continue
		}
		m := b.leaderAndIsr[id]
		if m == nil {
			m = map[TopicPartition]bool{}
			b.leaderAndIsr[id] = m
		}
		m[tp] = m[tp] || isNew
	}
	b.addUpdateMetadata(c.liveOrShuttingDownBrokerIDs(), []TopicPartition{tp})
}

// addUpdateMetadata is addUpdateMetadataRequestForBrokers: UpdateMetadata to brokers with
// the given partitions (none: only the live broker list).
func (b *requestBatch) addUpdateMetadata(brokers []int32, tps []TopicPartition) {
	for _, id := range brokers {
		if id >= 0 {
			b.umBrokers[id] = true
		}
	}
	for _, tp := range tps {
		b.umPartitions[tp] = true
	}
}

func (b *requestBatch) addStopReplica(c *controllerContext, brokers []int32, tp TopicPartition, deletePartition bool) {
	for _, id := range brokers {
		if id < 0 || !c.isRegistered(id) {
			continue
		}
		m := b.stopReplica[id]
		if m == nil {
			m = map[TopicPartition]bool{}
			b.stopReplica[id] = m
		}
		m[tp] = m[tp] || deletePartition
	}
}

// brokerRequest is one request queued for one broker.
type brokerRequest struct {
	broker int32
	req    kmsg.Request
}

// build turns the batch into requests from the context's current state, in Kafka's order:
// LeaderAndIsr, then UpdateMetadata, then StopReplica; brokers in id order. Partitions
// without leadership information are skipped. Fields are filled for every version (both the
// v0-v1/v0-v4 flat lists and the per-topic lists) since the version is negotiated per connection.
func (b *requestBatch) build(c *controllerContext, controllerID int32, interBrokerListener string) []brokerRequest {
	var out []brokerRequest
	for _, id := range sortedKeys(b.leaderAndIsr) {
		parts := b.leaderAndIsr[id]
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.ControllerID = controllerID
		req.ControllerEpoch = c.epoch
		req.BrokerEpoch = c.liveBrokers[id].Epoch
		leaders := map[int32]bool{}
		topicIdx := map[string]int{}
		for _, tp := range sortedTPs(parts) {
			st, ok := c.partitionLeadership[tp]
			if !ok {
				continue
			}
			ps := kmsg.NewLeaderAndISRRequestTopicPartition()
			ps.Topic = tp.Topic
			ps.Partition = tp.Partition
			ps.ControllerEpoch = st.ControllerEpoch
			ps.Leader = st.Leader
			ps.LeaderEpoch = st.LeaderEpoch
			ps.ISR = slices.Clone(st.ISR)
			ps.ZKVersion = st.PartitionEpoch
			ps.Replicas = slices.Clone(c.replicas(tp))
			ps.AddingReplicas, ps.RemovingReplicas = c.reassigning(tp)
			ps.IsNew = parts[tp]
			ps.LeaderRecoveryState = int8(st.LeaderRecoveryState)
			req.PartitionStates = append(req.PartitionStates, ps)
			i, ok := topicIdx[tp.Topic]
			if !ok {
				ts := kmsg.NewLeaderAndISRRequestTopicState()
				ts.Topic = tp.Topic
				ts.TopicID = c.topics[tp.Topic].id
				req.TopicStates = append(req.TopicStates, ts)
				i = len(req.TopicStates) - 1
				topicIdx[tp.Topic] = i
			}
			req.TopicStates[i].PartitionStates = append(req.TopicStates[i].PartitionStates, ps)
			if st.Leader >= 0 {
				leaders[st.Leader] = true
			}
		}
		if len(req.PartitionStates) == 0 {
			continue
		}
		// Live leaders: the leaders named in this request, at their inter-broker endpoint.
		for _, l := range sortedKeys(leaders) {
			info, ok := c.liveBrokers[l]
			if !ok {
				continue
			}
			ep := interBrokerEndpoint(info, interBrokerListener)
			ll := kmsg.NewLeaderAndISRRequestLiveLeader()
			ll.BrokerID, ll.Host, ll.Port = l, ep.Host, ep.Port
			req.LiveLeaders = append(req.LiveLeaders, ll)
		}
		out = append(out, brokerRequest{id, req})
	}

	if len(b.umBrokers) > 0 {
		var states []kmsg.UpdateMetadataRequestTopicPartition
		var topicStates []kmsg.UpdateMetadataRequestTopicState
		topicIdx := map[string]int{}
		for _, tp := range sortedTPs(b.umPartitions) {
			st, ok := c.partitionLeadership[tp]
			if !ok {
				continue
			}
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Topic = tp.Topic
			ps.Partition = tp.Partition
			ps.ControllerEpoch = st.ControllerEpoch
			ps.Leader = st.Leader
			if c.topicsToDelete[tp.Topic] {
				ps.Leader = leaderDuringDelete
			}
			ps.LeaderEpoch = st.LeaderEpoch
			ps.ISR = slices.Clone(st.ISR)
			ps.ZKVersion = st.PartitionEpoch
			ps.Replicas = slices.Clone(c.replicas(tp))
			ps.OfflineReplicas = c.offlineReplicas(tp)
			states = append(states, ps)
			i, ok := topicIdx[tp.Topic]
			if !ok {
				ts := kmsg.NewUpdateMetadataRequestTopicState()
				ts.Topic = tp.Topic
				ts.TopicID = c.topics[tp.Topic].id
				topicStates = append(topicStates, ts)
				i = len(topicStates) - 1
				topicIdx[tp.Topic] = i
			}
			topicStates[i].PartitionStates = append(topicStates[i].PartitionStates, ps)
		}
		var live []kmsg.UpdateMetadataRequestLiveBroker
		for _, id := range c.liveOrShuttingDownBrokerIDs() {
			live = append(live, updateMetadataBroker(c.liveBrokers[id]))
		}
		for _, id := range sortedKeys(b.umBrokers) {
			if !c.isRegistered(id) {
				continue
			}
			req := kmsg.NewPtrUpdateMetadataRequest()
			req.ControllerID = controllerID
			req.ControllerEpoch = c.epoch
			req.BrokerEpoch = c.liveBrokers[id].Epoch
			req.PartitionStates = states
			req.TopicStates = topicStates
			req.LiveBrokers = live
			out = append(out, brokerRequest{id, req})
		}
	}

	for _, id := range sortedKeys(b.stopReplica) {
		parts := b.stopReplica[id]
		// StopReplica v3+: per-partition delete flag and leader epoch; v0-v2 use one flag for
		// the request, so split deleting and non-deleting partitions into two requests as Kafka does.
		for _, del := range []bool{false, true} {
			req := kmsg.NewPtrStopReplicaRequest()
			req.ControllerID = controllerID
			req.ControllerEpoch = c.epoch
			req.BrokerEpoch = c.liveBrokers[id].Epoch
			req.DeletePartitions = del
			topicIdx := map[string]int{}
			for _, tp := range sortedTPs(parts) {
				if parts[tp] != del {
					continue
				}
				i, ok := topicIdx[tp.Topic]
				if !ok {
					t := kmsg.NewStopReplicaRequestTopic()
					t.Topic = tp.Topic
					req.Topics = append(req.Topics, t)
					i = len(req.Topics) - 1
					topicIdx[tp.Topic] = i
				}
				t := &req.Topics[i]
				t.Partitions = append(t.Partitions, tp.Partition)
				ps := kmsg.NewStopReplicaRequestTopicPartitionState()
				ps.Partition = tp.Partition
				ps.LeaderEpoch = -1 // Kafka: -1 unless the partition is being deleted (then -2)
				if st, ok := c.partitionLeadership[tp]; ok {
					ps.LeaderEpoch = st.LeaderEpoch
				}
				if c.topicsToDelete[tp.Topic] {
					ps.LeaderEpoch = leaderEpochDuringDelete
				}
				ps.Delete = del
				t.PartitionStates = append(t.PartitionStates, ps)
			}
			if len(req.Topics) > 0 {
				out = append(out, brokerRequest{id, req})
			}
		}
	}
	return out
}

// Sentinels Kafka uses while a topic is being deleted (LeaderAndIsr.LeaderDuringDelete,
// LeaderAndIsr.EpochDuringDelete).
const (
	leaderDuringDelete      int32 = -2
	leaderEpochDuringDelete int32 = -2
)

// reassigning returns the adding and removing replicas of tp (empty outside a reassignment).
func (c *controllerContext) reassigning(tp TopicPartition) (adding, removing []int32) {
	t := c.topics[tp.Topic]
	if t == nil {
		return nil, nil
	}
	return slices.Clone(t.adding[tp.Partition]), slices.Clone(t.removing[tp.Partition])
}

func interBrokerEndpoint(info zkmeta.BrokerInfo, listener string) zkmeta.Endpoint {
	if ep, ok := info.Endpoint(listener); ok {
		return ep
	}
	if len(info.Endpoints) > 0 {
		return info.Endpoints[0]
	}
	return zkmeta.Endpoint{Port: -1}
}

// securityProtocolIDs are Kafka's SecurityProtocol ids as sent in UpdateMetadata.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

func updateMetadataBroker(info zkmeta.BrokerInfo) kmsg.UpdateMetadataRequestLiveBroker {
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = info.ID
	if info.Rack != "" {
		rack := info.Rack
		lb.Rack = &rack
	}
	for _, e := range info.Endpoints {
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = e.Host, e.Port, e.ListenerName
		ep.SecurityProtocol = securityProtocolIDs[e.SecurityProtocol]
		lb.Endpoints = append(lb.Endpoints, ep)
		// v0 carries one PLAINTEXT host/port.
		if lb.Host == "" && e.SecurityProtocol == "PLAINTEXT" {
			lb.Host, lb.Port = e.Host, e.Port
		}
	}
	return lb
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedTPs[V any](m map[TopicPartition]V) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, compareTP)
	return out
}
