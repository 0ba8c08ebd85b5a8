package broker

// 28_txn_offset_commit.go — TxnOffsetCommit v0-3 (KafkaApis.handleTxnOffsetCommitRequest,
// GroupCoordinator.handleTxnCommitOffsets). A transactional producer commits a consumer
// group's offsets inside its transaction (sendOffsetsToTransaction, after AddOffsetsToTxn):
// the group coordinator verifies with the transaction coordinator that the group's offsets
// partition is in the transaction (transaction.partition.verification.enable), appends the
// offsets to __consumer_offsets as a transactional batch of the producer, and keeps them
// pending until the transaction's COMMIT or ABORT marker reaches that partition. v2 adds the
// committed leader epoch; v3 the member id, generation and group instance id, which are then
// checked against the group (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).
// Partitions of topics the metadata cache does not know get UNKNOWN_TOPIC_OR_PARTITION and
// are not committed. v0-1 answer COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS,
// which clients before 2.0 do not expect (KAFKA-7296).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 3, (*APIs).handleTxnOffsetCommit) }

func (a *APIs) handleTxnOffsetCommit(ctx context.Context, rc *RequestContext, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	// KafkaApis: WRITE on the transactional id, READ on the group (each failure answers
	// every partition), then READ on each topic.
	var reqErr *kerr.Error
	switch {
	case !a.authorize(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		reqErr = kerr.TransactionalIDAuthorizationFailed
	case !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		reqErr = kerr.GroupAuthorizationFailed
	}
	if reqErr != nil {
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, reqErr.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	readable := a.filterAuthorized(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range req.Topics {
			add(t.Topic)
		}
	})
	now := a.now().UnixMilli()
	tcr := group.TxnCommitRequest{GroupID: req.Group, TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
		ProducerEpoch: req.ProducerEpoch, MemberID: req.MemberID, GroupInstanceID: req.InstanceID, GenerationID: req.Generation,
		Offsets: map[group.TopicPartition]group.OffsetAndMetadata{}}
	if req.Version < 3 {
		// Fields of v3+: kmsg leaves their defaults, which mean "no member".
		tcr.MemberID, tcr.GroupInstanceID, tcr.GenerationID = "", nil, -1
	}
	errs := map[group.TopicPartition]*kerr.Error{}
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
			// GroupCoordinatorAdapter.createOffsetAndMetadata: commit time is now, no expiry.
			om := group.OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: -1, CommitTimestamp: now, ExpireTimestamp: -1}
			if req.Version >= 2 {
				om.LeaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				om.Metadata = *p.Metadata
			}
			tcr.Offsets[tp] = om
		}
	}
	if len(tcr.Offsets) > 0 {
		for tp, err := range a.groupCoordinator().TxnCommitOffsets(ctx, tcr) {
			errs[tp] = err
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			err := errs[group.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
			if req.Version < 2 && err == kerr.CoordinatorLoadInProgress {
				err = kerr.CoordinatorNotAvailable
			}
			rp.ErrorCode = errCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
