package broker

import (
	"sync"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

// services are the per-broker components the handlers start on first use: the group
// coordinator (KafkaServer.groupCoordinator), the producer id manager and the fetch session
// cache (FetchManager). Broker shutdown
// stops them through ShutdownGroupCoordinator and ShutdownProducerIDManager.
type services struct {
	mu     sync.Mutex
	groups *group.Coordinator
	pids   *ProducerIDManager

	fetchSessions *FetchSessionCache
}
