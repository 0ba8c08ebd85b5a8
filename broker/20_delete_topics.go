package broker

// 20_delete_topics.go — DeleteTopics v0-6 (KafkaApis.handleDeleteTopicsRequest and
// ZkAdminManager.deleteTopics). Served only by the active controller (others answer
// NOT_CONTROLLER). With delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED
// (INVALID_REQUEST before v3). Otherwise the handler creates /admin/delete_topics/<t>
// (an existing marker is fine) and waits (DelayedDeleteTopics) until the topic is gone from
// the metadata cache, answering REQUEST_TIMED_OUT for topics still there after timeout_ms
// (at once when timeout_ms <= 0). The controller's deletion manager does the deleting.
// DELETE on each topic (TOPIC_AUTHORIZATION_FAILED); a topic named by id without DESCRIBE
// loses its name in the answer. The controller mutation quota (controller_mutation_quota.go)
// charges each deleted topic's partitions, strictly from v5 (THROTTLING_QUOTA_EXCEEDED), and
// sets throttle_time_ms.

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() { registerAPI(0, 6, (*APIs).handleDeleteTopics) }

func (a *APIs) handleDeleteTopics(ctx context.Context, rc *RequestContext, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	mq := a.controllerMutationQuotas().newQuotaFor(rc, 5)

	// DeleteTopicsRequest.topics(): v6 names or ids, older versions names only.
	topics := req.Topics
	if req.Version < 6 {
		topics = make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
		for i := range req.TopicNames {
			topics[i] = kmsg.NewDeleteTopicsRequestTopic()
			topics[i].Topic = strp(req.TopicNames[i])
		}
	}
	results := make([]kmsg.DeleteTopicsResponseTopic, len(topics))
	for i, t := range topics {
		results[i] = kmsg.NewDeleteTopicsResponseTopic()
		results[i].Topic, results[i].TopicID = t.Topic, t.TopicID
	}
	finish := func() kmsg.Response {
		resp.Topics = results
		throttleControllerMutation(rc, mq, &resp.ThrottleMillis)
		return resp
	}
	setAll := func(err *apiError) kmsg.Response {
		for i := range results {
			results[i].ErrorCode, results[i].ErrorMessage = apiErrorParts(err)
		}
		return finish()
	}

	ad := a.admin()
	switch {
	case !ad.isController():
		return setAll(&apiError{code: kerr.NotController}), nil
	case !a.Config.DeleteTopicEnable:
		if req.Version < 3 {
			return setAll(&apiError{code: kerr.InvalidRequest}), nil
		}
		return setAll(&apiError{code: kerr.TopicDeletionDisabled}), nil
	}
	for _, t := range topics {
		if t.Topic != nil && t.TopicID != ([16]byte{}) {
			// InvalidRequestException for the whole request (getErrorResponse).
			return setAll(newAPIError(kerr.InvalidRequest, "Topic name and topic ID can not both be specified.")), nil
		}
	}

	byID := make([]bool, len(results))
	for i := range results {
		r := &results[i]
		if r.TopicID != ([16]byte{}) {
			byID[i] = true
			if name, ok := a.Metadata.TopicName(r.TopicID); ok {
				r.Topic = strp(name)
			}
		}
	}
	// KafkaApis: DELETE on each topic; a topic named by id without DESCRIBE on it keeps
	// its name secret.
	names := func(add func(string)) {
		for i := range results {
			if results[i].Topic != nil {
				add(*results[i].Topic)
			}
		}
	}
	describable := a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, names)
	deletable := a.filterAuthorized(rc, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, names)
	var toDelete []int
	for i := range results {
		r := &results[i]
		if byID[i] && r.Topic == nil {
			r.ErrorCode = kerr.UnknownTopicID.Code
			continue
		}
		if byID[i] && !describable.has(*r.Topic) {
			r.Topic, r.ErrorCode = nil, kerr.TopicAuthorizationFailed.Code
			continue
		}
		if r.Topic != nil && !deletable.has(*r.Topic) {
			r.ErrorCode = kerr.TopicAuthorizationFailed.Code
			continue
		}
		if r.Topic == nil || !a.Metadata.Contains(*r.Topic) {
			r.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		}
		toDelete = append(toDelete, i)
	}
	if len(toDelete) == 0 {
		return finish(), nil
	}

	// ZkAdminManager.deleteTopics → AdminZkClient.deleteTopic for each topic.
	var marked []int
	for _, i := range toDelete {
		r := &results[i]
		err := mq.record(float64(a.topicPartitionCount(*r.Topic)))
		if err != nil {
			r.ErrorCode, _ = apiErrorParts(err)
			ad.log.WithField("topic", *r.Topic).Debug("topic deletion not allowed because quota is violated")
			continue
		}
		err = ad.markTopicForDeletion(*r.Topic)
		if err != nil {
			// handleDeleteTopicsResults sets the code only.
			r.ErrorCode, _ = apiErrorParts(err)
			// A client's mistake (an unknown topic) is not an operator's problem.
			entry := ad.log.WithError(err).WithField("topic", *r.Topic)
			if r.ErrorCode == kerr.UnknownServerError.Code {
				entry.Error("error processing delete topic request")
			} else {
				entry.Info("error processing delete topic request")
			}
			continue
		}
		marked = append(marked, i)
	}
	if len(marked) == 0 {
		return finish(), nil
	}
	gone := func() bool {
		for _, i := range marked {
			if a.Metadata.Contains(*results[i].Topic) {
				return false
			}
		}
		return true
	}
	if req.TimeoutMillis > 0 {
		ad.waitFor(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond, gone)
	}
	for _, i := range marked {
		if req.TimeoutMillis <= 0 || a.Metadata.Contains(*results[i].Topic) {
			results[i].ErrorCode = kerr.RequestTimedOut.Code
		}
	}
	return finish(), nil
}

// markTopicForDeletion is AdminZkClient.deleteTopic: create /admin/delete_topics/<t> if the
// topic exists; an existing marker is not an error (the caller still waits for deletion).
func (ad *adminState) markTopicForDeletion(topic string) error {
	if _, _, err := ad.zk.GetTopic(topic); err != nil {
		if errors.Is(err, zkmeta.ErrNoNode) {
			return newAPIError(kerr.UnknownTopicOrPartition, "Topic `%s` to delete does not exist", topic)
		}
		return err
	}
	err := ad.zk.MarkTopicForDeletion(topic)
	if err != nil && !errors.Is(err, zkmeta.ErrNodeExists) && !errors.Is(err, zkmeta.ErrTopicMarkedForDeletion) {
		return err
	}
	ad.log.WithFields(logrus.Fields{"topic": topic}).Info("marked topic for deletion")
	return nil
}
