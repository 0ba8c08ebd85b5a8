package config

import (
	"strings"
	"testing"
)

// replica.selector.class: unset (leader only) and Kafka's RackAwareReplicaSelector start;
// any other class, an empty value included, fails start-up naming the key.
func TestReplicaSelectorClass(t *testing.T) {
	c, _, err := FromMap(base())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Props["replica.selector.class"]; ok {
		t.Errorf("unset replica.selector.class present in Props as %q", v)
	}
	c, _, err = FromMap(base("replica.selector.class", " "+RackAwareReplicaSelector+" "))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Props["replica.selector.class"]; got != RackAwareReplicaSelector {
		t.Errorf("Props[replica.selector.class] = %q", got)
	}
	for _, bad := range []string{"", "org.apache.kafka.common.replica.LeaderSelector", "com.example.MySelector"} {
		_, _, err := FromMap(base("replica.selector.class", bad))
		if err == nil {
			t.Errorf("replica.selector.class=%q accepted", bad)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "replica.selector.class") || !strings.Contains(msg, "cannot be found") {
			t.Errorf("replica.selector.class=%q: error %q", bad, msg)
		}
	}
}
