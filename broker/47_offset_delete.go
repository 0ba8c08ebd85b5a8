package broker

// 47_offset_delete.go — OffsetDelete v0 (KafkaApis.handleOffsetDeleteRequest, KIP-496):
// delete a group's offsets of topics it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

func init() { registerAPI(0, 0, (*APIs).handleOffsetDelete) }

func (a *APIs) handleOffsetDelete(ctx context.Context, rc *RequestContext, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// KafkaApis: DELETE on the group (else a top-level GROUP_AUTHORIZATION_FAILED), READ on
	// each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions).
	if !a.authorize(rc, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	readable := a.filterAuthorized(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range req.Topics {
			add(t.Topic)
		}
	})
	var tps []group.TopicPartition
	for _, t := range req.Topics {
		if !readable.has(t.Topic) {
			continue
		}
		for _, p := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	topErr, errs := a.groupCoordinator().DeleteOffsets(ctx, req.Group, tps)
	if topErr != nil {
		resp.ErrorCode = topErr.Code
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errCode(errs[group.TopicPartition{Topic: t.Topic, Partition: p.Partition}])
			if !readable.has(t.Topic) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
