package broker

// 66_list_transactions.go — ListTransactions v0 (KafkaApis.handleListTransactionsRequest →
// TransactionCoordinator.handleListTransactions): the transactional ids of the
// __transaction_state partitions this broker coordinates, filtered by state names and
// producer ids (an empty filter matches all); state filters Kafka does not know come back in
// UnknownStateFilters; COORDINATOR_LOAD_IN_PROGRESS while a partition loads.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 0, (*APIs).handleListTransactions) }

func (a *APIs) handleListTransactions(ctx context.Context, rc *RequestContext, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	listing, code, unknown := a.txnCoordinator().ListTransactions(req.StateFilters, req.ProducerIDFilters)
	resp.ErrorCode = code
	resp.UnknownStateFilters = unknown
	for _, l := range listing {
		if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, l.TransactionalID) {
			continue // KafkaApis: only transactional ids the principal may DESCRIBE
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.TransactionalID, l.ProducerID, l.State
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
