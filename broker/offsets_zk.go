package broker

// offsets_zk.go — the version 0 paths of OffsetCommit and OffsetFetch, which Kafka 3.7 in
// ZooKeeper mode serves from ZooKeeper instead of the group coordinator
// (KafkaApis.commitOffsetsToZookeeper and handleOffsetFetchRequestFromZookeeper): offsets
// of the old ZooKeeper-based consumers live in /consumers/<group>/offsets/<topic>/<partition>.
// Any broker answers them; no group membership, generation or coordinator is involved and
// the metadata string is not stored.

import (
	"unicode/utf16"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/logstore"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// zkOffsets is the ZooKeeper client the v0 offset APIs use, nil when the APIs run without
// one (unit tests of the data path): Kafka answers UNSUPPORTED_VERSION there, as its
// metadataSupport.requireZkOrThrow does outside ZooKeeper mode.
func (a *APIs) zkOffsets() *zkmeta.Client {
	if ad := a.admin(); ad != nil {
		return ad.zk
	}
	return nil
}

// javaStringLength is String.length: UTF-16 code units, what Kafka compares with
// offset.metadata.max.bytes.
func javaStringLength(s string) int {
	n := 0
	for _, r := range s { // invalid UTF-8 decodes as U+FFFD: one unit
		n += utf16.RuneLen(r)
	}
	return n
}

// commitOffsetsToZooKeeper stores the already authorized, existing partitions of an
// OffsetCommit v0 one znode at a time, as commitOffsetsToZookeeper: a metadata string over
// offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE, a ZooKeeper failure that
// partition's error (Errors.forException: UNKNOWN_SERVER_ERROR). ok is false without
// ZooKeeper.
func (a *APIs) commitOffsetsToZooKeeper(rc *RequestContext, groupID string, offsets map[group.TopicPartition]group.OffsetAndMetadata) (map[group.TopicPartition]*kerr.Error, bool) {
	zk := a.zkOffsets()
	if zk == nil {
		return nil, false
	}
	maxMetadata := 4096
	if a.Config != nil {
		maxMetadata = int(propInt(a.Config.Props, "offset.metadata.max.bytes", 4096))
	}
	errs := make(map[group.TopicPartition]*kerr.Error, len(offsets))
	for tp, om := range offsets {
		if javaStringLength(om.Metadata) > maxMetadata {
			errs[tp] = kerr.OffsetMetadataTooLarge
			continue
		}
		if err := zk.SetOrCreateConsumerOffset(groupID, tp.Topic, tp.Partition, om.Offset); err != nil {
			rc.Log.WithError(err).WithFields(logrus.Fields{"group": groupID, "topic": tp.Topic, "partition": tp.Partition}).
				Warn("storing a version 0 offset commit in ZooKeeper failed")
			errs[tp] = kerr.UnknownServerError
		}
	}
	return errs, true
}

// fetchOffsetsFromZooKeeper answers an OffsetFetch v0 whose group READ check passed
// (handleOffsetFetchRequestFromZookeeper): topics without DESCRIBE get offset -1 with
// TOPIC_AUTHORIZATION_FAILED; a partition unknown to the metadata cache or without a
// committed offset gets -1 and no error; a ZooKeeper failure gets -1 and the error. The
// metadata is always empty.
func (a *APIs) fetchOffsetsFromZooKeeper(rc *RequestContext, req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) *kmsg.OffsetFetchResponse {
	zk := a.zkOffsets()
	if zk == nil {
		return offsetFetchV0ErrorResponse(req, resp, kerr.UnsupportedVersion)
	}
	describable := a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range req.Topics {
			add(t.Topic)
		}
	})
	idx := map[string]int{}
	seen := map[group.TopicPartition]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := group.TopicPartition{Topic: t.Topic, Partition: p}
			if seen[tp] { // Kafka answers from a map: one entry per partition
				continue
			}
			seen[tp] = true
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			md := ""
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, &md
			switch {
			case !describable.has(t.Topic):
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case a.Metadata != nil && !a.hasPartition(t.Topic, p):
				// UNKNOWN_PARTITION: -1 without an error.
			default:
				off, ok, err := zk.GetConsumerOffset(req.Group, t.Topic, p)
				switch {
				case err != nil:
					rc.Log.WithError(err).WithFields(logrus.Fields{"group": req.Group, "topic": t.Topic, "partition": p}).
						Warn("reading a version 0 committed offset from ZooKeeper failed")
					rp.ErrorCode = kerr.UnknownServerError.Code
				case ok:
					rp.Offset = off
				}
			}
			i, ok := idx[t.Topic]
			if !ok {
				i = len(resp.Topics)
				idx[t.Topic] = i
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
		}
	}
	return resp
}

func (a *APIs) hasPartition(topic string, partition int32) bool {
	_, ok := a.Metadata.Partition(logstore.TopicPartition{Topic: topic, Partition: partition})
	return ok
}

// offsetFetchV0ErrorResponse is OffsetFetchRequest.getErrorResponse for v0-1: every
// requested partition with offset -1 and the error.
func offsetFetchV0ErrorResponse(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, err *kerr.Error) *kmsg.OffsetFetchResponse {
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			md := ""
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, &md, err.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
