package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/zktest"
)

// After a ZooKeeper session expiry the broker registers again under the new session (a
// new broker epoch) and the controller is re-elected (KafkaServer's session-expiration
// handling).
func TestBrokerReRegistersAfterSessionExpiry(t *testing.T) {
	zk := testZK(t)
	proxy := zktest.StartProxy(t, zk.Addr())
	chroot := testChroot(t)
	b := startTestBroker(t, chroot, map[string]string{
		"zookeeper.connect":            proxy.Connect(chroot),
		"zookeeper.session.timeout.ms": "2000",
	})
	waitController(t, b)
	oldEpoch := b.BrokerEpoch()

	proxy.Partition()
	// The server expires the session after 2 s without pings; wait a little longer.
	time.Sleep(3500 * time.Millisecond)
	proxy.Heal()

	adminWaitFor(t, 20*time.Second, "re-registration with a new broker epoch", func() bool { return b.BrokerEpoch() > oldEpoch })
	info, err := b.ZK().GetBroker(b.ID())
	if err != nil || info.Epoch != b.BrokerEpoch() {
		t.Fatalf("registration after expiry %+v, %v; broker epoch %d", info, err, b.BrokerEpoch())
	}
	// The controller resigned with the old session and is elected again with a new epoch.
	adminWaitFor(t, 20*time.Second, "controller re-elected with epoch >= 2", func() bool {
		return b.Controller().IsActive() && b.Controller().Epoch() >= 2
	})

	// Requests meant for the previous incarnation (old broker epoch) are now fenced.
	tc := adminDial(t, b.Addr("PLAINTEXT"))
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = b.ID(), b.Controller().Epoch(), oldEpoch
	adminWantCode(t, "UpdateMetadata with the old broker epoch", tc.request(um, 8).(*kmsg.UpdateMetadataResponse).ErrorCode, kerr.StaleBrokerEpoch)
}
