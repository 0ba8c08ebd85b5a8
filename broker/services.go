package broker

import (
	"sync"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/coordinator/transaction"
)

// services are the per-broker components the handlers start on first use: the group
// coordinator (KafkaServer.groupCoordinator), the transaction coordinator with its marker
// connections (KafkaServer.transactionCoordinator), the producer id manager and the fetch
// session cache (FetchManager). Broker shutdown stops them through ShutdownTxnCoordinator,
// ShutdownGroupCoordinator and ShutdownProducerIDManager.
type services struct {
	mu     sync.Mutex
	groups *group.Coordinator
	pids   *ProducerIDManager

	txns       *transaction.TransactionCoordinator
	txnMarkers *txnMarkerSender

	fetchSessions *FetchSessionCache
}
