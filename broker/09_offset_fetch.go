package broker

// 09_offset_fetch.go — OffsetFetch v0-9 (KafkaApis.handleOffsetFetchRequest). v2+ null
// topics mean every partition with a committed offset and carry a top-level error; v0-1 put a
// group error on each partition. v5+ leader epoch, v7+ RequireStable: a partition with a
// pending transactional offset (or a commit still being appended) answers offset -1 with
// UNSTABLE_OFFSET_COMMIT on the partition, in v7 and in v8+'s groups alike (the group error
// stays NONE, as Kafka 3.7). v8+ several groups per request (member id/epoch of v9 are
// ignored by the classic coordinator). v0 reads ZooKeeper's /consumers (offsets_zk.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

func init() { registerAPI(0, 9, (*APIs).handleOffsetFetch) }

type offsetFetchTopic struct {
	topic string
	parts []int32
}

// fetchGroupOffsets answers one group: per topic, per partition (offset, epoch, metadata, err).
func (a *APIs) fetchGroupOffsets(groupID string, topics []offsetFetchTopic, all, requireStable bool) ([]group.FetchedOffset, *kerr.Error) {
	var tps []group.TopicPartition
	if !all {
		tps = []group.TopicPartition{}
		for _, t := range topics {
			for _, p := range t.parts {
				tps = append(tps, group.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	return a.groupCoordinator().FetchOffsets(groupID, tps, requireStable)
}

// fetchGroupOffsetsAuthorized is fetchGroupOffsets behind KafkaApis's topic checks: for
// all partitions, topics without DESCRIBE are left out; for named ones they are answered
// TOPIC_AUTHORIZATION_FAILED (offset -1) without asking the coordinator.
func (a *APIs) fetchGroupOffsetsAuthorized(rc *RequestContext, groupID string, topics []offsetFetchTopic, all, requireStable bool) ([]group.FetchedOffset, *kerr.Error) {
	if all {
		offs, err := a.fetchGroupOffsets(groupID, nil, true, requireStable)
		if err != nil {
			return offs, err
		}
		ok := a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, func(add func(string)) {
			for _, o := range offs {
				add(o.TP.Topic)
			}
		})
		kept := offs[:0]
		for _, o := range offs {
			if ok.has(o.TP.Topic) {
				kept = append(kept, o)
			}
		}
		return kept, nil
	}
	ok := a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range topics {
			add(t.topic)
		}
	})
	var allowed, denied []offsetFetchTopic
	for _, t := range topics {
		if ok.has(t.topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	if len(denied) == 0 {
		return a.fetchGroupOffsets(groupID, topics, false, requireStable)
	}
	offs, err := a.fetchGroupOffsets(groupID, allowed, false, requireStable)
	if err != nil {
		return offs, err
	}
	for _, t := range denied {
		for _, p := range t.parts {
			offs = append(offs, group.FetchedOffset{TP: group.TopicPartition{Topic: t.topic, Partition: p}, Offset: -1, LeaderEpoch: -1,
				Err: kerr.TopicAuthorizationFailed})
		}
	}
	return offs, nil
}

func (a *APIs) handleOffsetFetch(ctx context.Context, rc *RequestContext, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
				rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			var topics []offsetFetchTopic
			for _, t := range g.Topics {
				topics = append(topics, offsetFetchTopic{t.Topic, t.Partitions})
			}
			offs, err := a.fetchGroupOffsetsAuthorized(rc, g.Group, topics, g.Topics == nil, req.RequireStable)
			rg.Group, rg.ErrorCode = g.Group, errCode(err)
			idx := map[string]int{}
			for _, o := range offs {
				i, ok := idx[o.TP.Topic]
				if !ok {
					i = len(rg.Topics)
					idx[o.TP.Topic] = i
					t := kmsg.NewOffsetFetchResponseGroupTopic()
					t.Topic = o.TP.Topic
					rg.Topics = append(rg.Topics, t)
				}
				p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				md := o.Metadata
				p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = o.TP.Partition, o.Offset, o.LeaderEpoch, &md, errCode(o.Err)
				rg.Topics[i].Partitions = append(rg.Topics[i].Partitions, p)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	var topics []offsetFetchTopic
	for _, t := range req.Topics {
		topics = append(topics, offsetFetchTopic{t.Topic, t.Partitions})
	}
	all := req.Topics == nil && req.Version >= 2
	if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, req.Group) {
		// OffsetFetchResponse for one group: the error at the top from v2; v0 (whose
		// error response names every partition) and v1 have no top-level error.
		if req.Version >= 2 {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else if req.Version == 0 {
			offsetFetchV0ErrorResponse(req, resp, kerr.GroupAuthorizationFailed)
		}
		return resp, nil
	}
	if req.Version == 0 {
		return a.fetchOffsetsFromZooKeeper(rc, req, resp), nil
	}
	offs, err := a.fetchGroupOffsetsAuthorized(rc, req.Group, topics, all, req.Version >= 7 && req.RequireStable)
	if err != nil {
		if req.Version >= 2 {
			resp.ErrorCode = err.Code
		}
		// Every requested partition carries the group error too (OffsetFetchResponse's
		// error constructor), which is what v0-1 clients read.
		offs = nil
		for _, t := range topics {
			for _, p := range t.parts {
				offs = append(offs, group.FetchedOffset{TP: group.TopicPartition{Topic: t.topic, Partition: p}, Offset: -1, LeaderEpoch: -1, Err: err})
			}
		}
	}
	idx := map[string]int{}
	for _, o := range offs {
		i, ok := idx[o.TP.Topic]
		if !ok {
			i = len(resp.Topics)
			idx[o.TP.Topic] = i
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = o.TP.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewOffsetFetchResponseTopicPartition()
		md := o.Metadata
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = o.TP.Partition, o.Offset, o.LeaderEpoch, &md, errCode(o.Err)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp, nil
}
