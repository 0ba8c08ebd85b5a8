package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInactiveControllerAnswersNotController(t *testing.T) {
	c := newController(Config{BrokerID: 3, Log: testLog(t)}, nil, kclientDial)
	if c.IsActive() || c.Epoch() != 0 {
		t.Fatal("a controller that never ran is active")
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	if resp := c.AlterPartition(context.Background(), req); resp.ErrorCode != kerr.NotController.Code || resp.GetVersion() != 3 {
		t.Fatalf("error code %d v%d, want NOT_CONTROLLER v3", resp.ErrorCode, resp.GetVersion())
	}
	// ControlledShutdown on a broker that is not the controller: Kafka's doControlledShutdown
	// throws ControllerMovedException, STALE_CONTROLLER_EPOCH on the wire.
	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.SetVersion(3)
	if resp := c.ControlledShutdown(context.Background(), cs); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("ControlledShutdown error code %d, want STALE_CONTROLLER_EPOCH", resp.ErrorCode)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := newController(Config{BrokerID: 1}, nil, kclientDial)
	if c.cfg.InterBrokerListenerName != "PLAINTEXT" || c.cfg.SocketTimeout.Seconds() != 30 || c.cfg.Log == nil {
		t.Fatalf("defaults: %+v", c.cfg)
	}
}
