package broker

// 65_describe_transactions.go — DescribeTransactions v0 (KafkaApis.handleDescribeTransactionsRequest
// → TransactionCoordinator.handleDescribeTransactions): for each transactional id this
// broker coordinates, its state by Kafka's name, producer id and epoch, timeout, start time
// and partitions; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or TRANSACTIONAL_ID_NOT_FOUND
// otherwise. Topics are listed by name, partitions ascending.

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/transaction"
)

func init() { registerAPI(0, 0, (*APIs).handleDescribeTransactions) }

func (a *APIs) handleDescribeTransactions(ctx context.Context, rc *RequestContext, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	if len(req.TransactionalIDs) == 0 {
		return resp, nil
	}
	// KafkaApis: DESCRIBE on each transactional id, and only the partitions of topics the
	// principal may DESCRIBE.
	c := a.txnCoordinator()
	for _, id := range req.TransactionalIDs {
		var d transaction.TransactionDescription
		if a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			d = c.DescribeTransactions([]string{id})[0]
		} else {
			d = transaction.TransactionDescription{TransactionalID: id, ErrCode: kerr.TransactionalIDAuthorizationFailed.Code}
		}
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode = d.TransactionalID, d.ErrCode
		if d.ErrCode == 0 {
			st.State, st.ProducerID, st.ProducerEpoch = d.State, d.ProducerID, d.ProducerEpoch
			st.TimeoutMillis, st.StartTimestamp = d.TimeoutMs, d.StartTimestamp
			topics := make([]string, 0, len(d.Partitions))
			for topic := range d.Partitions {
				topics = append(topics, topic)
			}
			sort.Strings(topics)
			for _, topic := range topics {
				if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic) {
					continue
				}
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = topic
				t.Partitions = slices.Sorted(slices.Values(d.Partitions[topic]))
				st.Topics = append(st.Topics, t)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
