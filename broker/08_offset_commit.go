package broker

// 08_offset_commit.go — OffsetCommit v0-9 (KafkaApis.handleOffsetCommitRequest). v1 carries a
// commit timestamp per partition, v2-4 a retention time (an expire timestamp in the record,
// value v1), v6+ the leader epoch, v7+ GroupInstanceId. Commits answer once appended with
// acks=-1 to __consumer_offsets. v0 commits go to ZooKeeper's /consumers as Kafka's
// commitOffsetsToZookeeper (offsets_zk.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 9, (*APIs).handleOffsetCommit) }

func (a *APIs) handleOffsetCommit(ctx context.Context, rc *RequestContext, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	// KafkaApis: READ on the group, else every partition GROUP_AUTHORIZATION_FAILED; then
	// READ on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
	if !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		return offsetCommitErrorResponse(req, resp, kerr.GroupAuthorizationFailed), nil
	}
	if req.InstanceID != nil && req.Version < 7 {
		return offsetCommitErrorResponse(req, resp, kerr.UnsupportedVersion), nil
	}
	now := a.now().UnixMilli()
	cr := group.CommitRequest{GroupID: req.Group, MemberID: req.MemberID, GroupInstanceID: req.InstanceID,
		GenerationID: req.Generation, Offsets: map[group.TopicPartition]group.OffsetAndMetadata{}}
	errs := map[group.TopicPartition]*kerr.Error{}
	readable := a.filterAuthorized(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range req.Topics {
			add(t.Topic)
		}
	})
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := group.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if !readable.has(t.Topic) {
				errs[tp] = kerr.TopicAuthorizationFailed
				continue
			}
			if a.Metadata != nil {
				if _, ok := a.Metadata.Partition(logstore.TopicPartition{Topic: t.Topic, Partition: p.Partition}); !ok {
					errs[tp] = kerr.UnknownTopicOrPartition
					continue
				}
			}
			om := group.OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: -1, CommitTimestamp: now, ExpireTimestamp: -1}
			if p.Metadata != nil {
				om.Metadata = *p.Metadata
			}
			if req.Version >= 6 {
				om.LeaderEpoch = p.LeaderEpoch
			}
			if req.Version == 1 && p.Timestamp != -1 {
				om.CommitTimestamp = p.Timestamp
			}
			if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
				om.ExpireTimestamp = om.CommitTimestamp + req.RetentionTimeMillis
			}
			cr.Offsets[tp] = om
		}
	}
	if len(cr.Offsets) > 0 && req.Version == 0 {
		zkErrs, ok := a.commitOffsetsToZooKeeper(rc, req.Group, cr.Offsets)
		if !ok {
			return offsetCommitErrorResponse(req, resp, kerr.UnsupportedVersion), nil
		}
		for tp, err := range zkErrs {
			errs[tp] = err
		}
	} else if len(cr.Offsets) > 0 {
		for tp, err := range a.groupCoordinator().CommitOffsets(ctx, cr) {
			errs[tp] = err
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errCode(errs[group.TopicPartition{Topic: t.Topic, Partition: p.Partition}])
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func offsetCommitErrorResponse(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err *kerr.Error) *kmsg.OffsetCommitResponse {
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, err.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
