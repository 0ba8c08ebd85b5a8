package zkmeta

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Errors. Callers test with errors.Is; nothing above zkmeta sees go-zookeeper's errors.
var (
	ErrNoNode     = errors.New("zkmeta: node does not exist")
	ErrNodeExists = errors.New("zkmeta: node already exists")
	ErrBadVersion = errors.New("zkmeta: znode version mismatch")
	ErrNotEmpty   = errors.New("zkmeta: node has children")

	ErrTopicExists            = errors.New("zkmeta: topic already exists")
	ErrTopicMarkedForDeletion = errors.New("zkmeta: topic is already marked for deletion")
	ErrControllerExists       = errors.New("zkmeta: another broker is controller")
	// ErrControllerMoved: the /controller_epoch check of a controller write failed (Kafka's
	// ControllerMovedException): this broker is no longer controller and must resign.
	ErrControllerMoved = errors.New("zkmeta: controller moved")
	ErrBrokerIDTaken   = errors.New("zkmeta: broker id already registered")

	ErrSessionExpired = errors.New("zkmeta: zookeeper session expired")
	ErrConnectionLoss = errors.New("zkmeta: zookeeper connection lost")
	ErrClosed         = errors.New("zkmeta: client closed")
)

// mapErr turns a go-zookeeper error into ours, with the operation and the chroot-relative path.
func mapErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var target error
	switch {
	case errors.Is(err, zk.ErrNoNode):
		target = ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		target = ErrNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		target = ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		target = ErrNotEmpty
	case errors.Is(err, zk.ErrSessionExpired):
		target = ErrSessionExpired
	case errors.Is(err, zk.ErrClosing):
		target = ErrClosed
	case errors.Is(err, zk.ErrNoAuth):
		target = ErrNoAuth
	case isConnLoss(err):
		target = ErrConnectionLoss
	default:
		return fmt.Errorf("zkmeta: %s %s: %v", op, path, err)
	}
	return fmt.Errorf("%s %s: %w", op, path, target)
}

// isConnLoss reports errors after which a request may be retried once connected (Kafka's
// retryRequestsUntilConnected retries CONNECTIONLOSS).
func isConnLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}
