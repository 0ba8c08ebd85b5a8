// Package transaction is Kafka's transaction coordinator (kafka.coordinator.transaction, 3.7):
// TransactionCoordinator (coordinator.go: InitProducerId, AddPartitionsToTxn and its v4
// verify-only form, EndTxn, DescribeTransactions, ListTransactions, timed-out aborts),
// TransactionStateManager (state_manager.go: the cache of transactional ids per
// __transaction_state partition, loading on election, appends with acks=-1, expiry of idle
// ids), TransactionMarkerChannelManager (marker_channel_manager.go: WriteTxnMarkers batched per
// destination broker, retries, completion), TransactionMetadata (metadata.go: the state
// machine) and TransactionLog (transaction_log.go: the record schemas, DecodeRecord for
// dump-log).
//
// The package imports neither broker nor controller: the broker hands it a Log (append to and
// read from the __transaction_state partitions, leadership), a ProducerIDGenerator and a
// MarkerSender (metadata-cache leaders and WriteTxnMarkers over the inter-broker listener), and
// calls OnElection/OnResignation from its LeaderAndIsr/StopReplica handling.
//
// Concurrency: TransactionCoordinator is safe for concurrent use; handlers block until their
// transition is durable. Lock order: the state manager's mu, then a TransactionMetadata's mu;
// the marker manager's mu is a leaf. No lock is held across a log append or a marker send.
// Every goroutine belongs to one runner (loads, sends, completion appends, timed aborts, the
// send loop and the sweep loop) that Shutdown cancels and waits for.
package transaction
