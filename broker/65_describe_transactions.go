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

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 0, (*APIs).handleDescribeTransactions) }

func (a *APIs) handleDescribeTransactions(ctx context.Context, rc *RequestContext, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	if len(req.TransactionalIDs) == 0 {
		return resp, nil
	}
	for _, d := range a.txnCoordinator().DescribeTransactions(req.TransactionalIDs) {
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
