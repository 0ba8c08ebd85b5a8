package config

import "fmt"

// The replica selectors samsa implements (KIP-392). Kafka 3.7 instantiates whatever class
// replica.selector.class names at ReplicaManager start-up; a class it cannot load stops the
// broker (ClassNotFoundException). samsa has no class loader, so only Kafka's own selector
// is accepted; unset keeps Kafka's default, every fetch served by the leader.
const (
	// RackAwareReplicaSelector is org.apache.kafka.common.replica.RackAwareReplicaSelector:
	// a consumer that sends its rack is pointed at an in-sync replica in that rack.
	RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)

// validReplicaSelector is replica.selector.class's check: the value must name a selector
// samsa provides. An empty value fails too, as Kafka's Class.forName("") does.
func validReplicaSelector(v string) string {
	if v == RackAwareReplicaSelector {
		return ""
	}
	return fmt.Sprintf("class %s cannot be found; samsa provides only %s (or leave the property unset for the leader-only default)", v, RackAwareReplicaSelector)
}
