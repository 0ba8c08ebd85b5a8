package broker

// 43_elect_leaders.go — ElectLeaders v0-2 (KafkaApis.handleElectLeaders and
// ReplicaManager.electLeaders). The controller runs the preferred or unclean election
// (controller.ElectLeaders; NOT_CONTROLLER for every partition when this broker is not the
// active controller). As DelayedElectLeader does, the answer then waits until this broker's
// metadata cache shows each newly elected leader, up to timeout_ms; partitions still waiting
// get REQUEST_TIMED_OUT. ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED. The elected leader is read back from the
// partition state znode, since the controller's answer does not carry it.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 2, (*APIs).handleElectLeaders) }

func (a *APIs) handleElectLeaders(ctx context.Context, rc *RequestContext, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	if !a.authorizeCluster(rc, kmsg.ACLOperationAlter) {
		// KafkaApis: ALTER on the cluster, else the error at the top and on every partition
		// named (none when the request asked for all of them).
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	ad := a.admin()
	if ad == nil || ad.controller == nil {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.NotController.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	deadline := time.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
	resp := ad.controller.ElectLeaders(ctx, req)
	resp.SetVersion(req.GetVersion())

	// DelayedElectLeader: the expected leader of every successfully elected partition.
	type expected struct {
		p      *kmsg.ElectLeadersResponseTopicPartition
		tp     logstore.TopicPartition
		leader int32
	}
	var waiting []expected
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.ErrorCode != 0 {
				continue
			}
			st, err := ad.zk.GetPartitionState(t.Topic, p.Partition)
			if err != nil {
				continue // the election happened; nothing to wait for that we can name
			}
			waiting = append(waiting, expected{p: p, tp: logstore.TopicPartition{Topic: t.Topic, Partition: p.Partition}, leader: st.Leader})
		}
	}
	if len(waiting) == 0 {
		return resp, nil
	}
	elected := func(e expected) bool {
		pm, ok := a.Metadata.Partition(e.tp)
		return ok && pm.Leader == e.leader
	}
	ad.waitFor(ctx, time.Until(deadline), func() bool {
		for _, e := range waiting {
			if !elected(e) {
				return false
			}
		}
		return true
	})
	for _, e := range waiting {
		if !elected(e) {
			e.p.ErrorCode = kerr.RequestTimedOut.Code
		}
	}
	return resp, nil
}
