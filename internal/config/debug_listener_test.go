package config

import "testing"

func TestDebugListener(t *testing.T) {
	c, _, err := FromMap(base())
	if err != nil || c.DebugListener != "" {
		t.Fatalf("default: %q %v", c.DebugListener, err)
	}
	c, _, err = FromMap(base("samsa.debug.listener", "127.0.0.1:6060"))
	if err != nil || c.DebugListener != "127.0.0.1:6060" {
		t.Fatalf("set: %q %v", c.DebugListener, err)
	}
	if _, _, err := FromMap(base("samsa.debug.listener", "6060")); err == nil {
		t.Fatal("samsa.debug.listener=6060 accepted")
	}
}
