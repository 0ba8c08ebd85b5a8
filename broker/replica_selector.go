package broker

// replica_selector.go — follower fetching (KIP-392), as Kafka 3.7's ReplicaSelector /
// RackAwareReplicaSelector (org.apache.kafka.common.replica) and
// ReplicaManager.findPreferredReadReplica:
//   - A Fetch v11+ from a consumer carries ClientMetadata (its rack_id, possibly empty).
//     Such a fetch may be served by a follower, up to the follower's high watermark
//     (FetchParams.fetchOnlyLeader); older versions and replica fetches need the leader.
//   - On the leader, the configured selector (replica.selector.class; unset = none, every
//     fetch served by the leader) may name another replica: the answer then holds only
//     preferred_read_replica, the offsets, and no records, and is sent at once.
//   - Only ISR members whose last known log range covers the fetch offset are candidates, so
//     a follower that fell out of the ISR stops being named: a consumer that asks the leader
//     again (new leader epoch in its metadata, or its preferred-replica timeout) stays there.

import (
	"cmp"
	"net"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

// ClientMetadata is what a v11+ fetch says about its client (Kafka's DefaultClientMetadata).
type ClientMetadata struct {
	RackID       string // the request's rack_id; "" when the client sent none
	ClientID     string
	ClientAddr   net.Addr
	ListenerName string
}

// ReplicaNode is a replica's endpoint on the client's listener; Empty is Kafka's
// Node.noNode() (the broker is not alive or has no such listener).
type ReplicaNode struct {
	ID    int32
	Rack  *string
	Empty bool
}

// ReplicaView is one replica as the selector sees it (Kafka's DefaultReplicaView).
type ReplicaView struct {
	Node                    ReplicaNode
	LogEndOffset            int64
	TimeSinceLastCaughtUpMs int64 // 0 for the leader
}

// PartitionView lists the candidate replicas, the leader among them.
type PartitionView struct {
	Replicas []ReplicaView
	Leader   ReplicaView
}

// ReplicaSelector picks the replica a consumer should fetch from; ok false means none.
type ReplicaSelector interface {
	Select(tp logstore.TopicPartition, client *ClientMetadata, pv PartitionView) (ReplicaView, bool)
}

// RackAwareReplicaSelector is Kafka's: a client with a rack gets the leader if it is in that
// rack, else the most caught-up replica of that rack; anyone else gets the leader.
type RackAwareReplicaSelector struct{}

func (RackAwareReplicaSelector) Select(_ logstore.TopicPartition, client *ClientMetadata, pv PartitionView) (ReplicaView, bool) {
	if client == nil || client.RackID == "" {
		return pv.Leader, true
	}
	var best ReplicaView
	found := false
	for _, r := range pv.Replicas {
		if r.Node.Rack == nil || *r.Node.Rack != client.RackID {
			continue
		}
		if r == pv.Leader {
			return pv.Leader, true // the leader is in the client's rack
		}
		if !found || moreCaughtUp(r, best) {
			best, found = r, true
		}
	}
	if !found {
		return pv.Leader, true
	}
	return best, true
}

// moreCaughtUp orders as ReplicaView.comparator's maximum: the larger log end offset, then
// the shorter time since last caught up, then the larger broker id.
func moreCaughtUp(a, b ReplicaView) bool {
	if a.LogEndOffset != b.LogEndOffset {
		return a.LogEndOffset > b.LogEndOffset
	}
	if a.TimeSinceLastCaughtUpMs != b.TimeSinceLastCaughtUpMs {
		return a.TimeSinceLastCaughtUpMs < b.TimeSinceLastCaughtUpMs
	}
	return a.Node.ID > b.Node.ID
}

// replicaSelector is the selector replica.selector.class names (ReplicaManager.
// createReplicaSelector); nil when unset. The config loader refuses any other class.
func (rm *ReplicaManager) replicaSelector() ReplicaSelector {
	if rm.cfg.Config == nil {
		return nil
	}
	if rm.cfg.Config.Props["replica.selector.class"] == config.RackAwareReplicaSelector {
		return RackAwareReplicaSelector{}
	}
	return nil
}

// FetchOnlyLeader is FetchParams.fetchOnlyLeader: followers, and consumers that sent no
// client metadata (Fetch v0–v10), are served by the leader only.
func (fp FetchParams) FetchOnlyLeader() bool {
	return fp.ReplicaID >= 0 || fp.Client == nil
}

// findPreferredReadReplica (ReplicaManager.findPreferredReadReplica): on the leader, for a
// consumer, the replica the selector prefers if it is not the leader itself.
func (rm *ReplicaManager) findPreferredReadReplica(p *Partition, client *ClientMetadata, replicaID int32, fetchOffset int64, now time.Time) (int32, bool) {
	if replicaID >= 0 || client == nil {
		return -1, false
	}
	sel := rm.replicaSelector()
	if sel == nil {
		return -1, false
	}
	node := func(id int32) ReplicaNode {
		if b, ok := rm.cfg.Metadata.Broker(id); ok {
			if _, ok := b.Endpoint(client.ListenerName); ok {
				return ReplicaNode{ID: id, Rack: b.Rack}
			}
		}
		return ReplicaNode{ID: -1, Empty: true}
	}
	p.mu.RLock()
	if p.mu.leaderID != p.localBrokerID || p.mu.log == nil {
		p.mu.RUnlock()
		return -1, false
	}
	leader := ReplicaView{Node: node(p.localBrokerID), LogEndOffset: p.mu.log.LogEndOffset()}
	pv := PartitionView{Leader: leader}
	p.hwMu.Lock() // the followers' fetch state is written under hwMu
	for id, rs := range p.mu.remotes {
		// Out-of-sync followers may lag indefinitely: never send a consumer there.
		if !slices.Contains(p.mu.isr, id) || rs.logEndOffset < fetchOffset || rs.logStartOffset > fetchOffset {
			continue
		}
		pv.Replicas = append(pv.Replicas, ReplicaView{
			Node:                    node(id),
			LogEndOffset:            rs.logEndOffset,
			TimeSinceLastCaughtUpMs: now.Sub(rs.lastCaughtUpTime).Milliseconds(),
		})
	}
	p.hwMu.Unlock()
	p.mu.RUnlock()
	pv.Replicas = append(pv.Replicas, leader)
	// Map order must not decide ties the comparator leaves (none: ids differ).
	slices.SortFunc(pv.Replicas, func(a, b ReplicaView) int { return cmp.Compare(a.Node.ID, b.Node.ID) })
	selected, ok := sel.Select(p.tp, client, pv)
	if !ok || selected.Node.Empty || selected == leader {
		return -1, false // the leader is never sent back as the preferred replica
	}
	return selected.Node.ID, true
}

// readPreferred is readFromLog's preferred-replica branch: when the selector names another
// replica, the answer is the leader's offsets (epoch checked, leadership not required, as
// fetchOffsetSnapshot) without records. handled is false when the read proceeds normally.
func (rm *ReplicaManager) readPreferred(p *Partition, params FetchParams, r FetchPartitionRequest) (res FetchPartitionResult, handled bool, err error) {
	id, ok := rm.findPreferredReadReplica(p, params.Client, params.ReplicaID, r.FetchOffset, rm.cfg.Now())
	if !ok {
		return FetchPartitionResult{}, false, nil
	}
	p.mu.RLock()
	l, err := p.leaderLogLocked(r.CurrentLeaderEpoch, false)
	p.mu.RUnlock()
	if err != nil {
		return FetchPartitionResult{}, true, err
	}
	rm.log.WithFields(logrus.Fields{"topic": r.TP.Topic, "partition": r.TP.Partition, "preferred_read_replica": id,
		"client_id": params.Client.ClientID, "rack": params.Client.RackID}).Debug("replica selector returned a preferred read replica")
	return FetchPartitionResult{
		HighWatermark:        l.HighWatermark(),
		LastStableOffset:     l.LastStableOffset(),
		LogStartOffset:       l.LogStartOffset(),
		HasPreferred:         true,
		PreferredReadReplica: id,
	}, true, nil
}
