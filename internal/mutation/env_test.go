//go:build samsa_mutations

package mutation

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	defer Reset()
	on, err := FromEnv(" hw-ignores-isr, skip-epoch-truncation ,")
	if err != nil || len(on) != 2 || !HWIgnoresISR.Load() || !SkipEpochTruncation.Load() || ElectOutsideISR.Load() {
		t.Fatalf("on %v, err %v", on, err)
	}
	Reset()
	if _, err := FromEnv("hw-ignores-isr,hw-ignore-isr"); err == nil || !strings.Contains(err.Error(), `"hw-ignore-isr"`) {
		t.Fatalf("a typo: %v", err)
	}
	if on, err := FromEnv(""); err != nil || len(on) != 0 {
		t.Fatalf("empty: %v %v", on, err)
	}
}

// TestEnvAtStart runs this test binary again with SAMSA_MUTATIONS set: init switches the
// mutation on and says so on stderr, and an unknown name stops the process.
func TestEnvAtStart(t *testing.T) {
	if os.Getenv("SAMSA_MUTATIONS_CHILD") != "" {
		if !HWIgnoresISR.Load() {
			t.Fatal("SAMSA_MUTATIONS=hw-ignores-isr did not switch it on")
		}
		return
	}
	run := func(v string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvAtStart$")
		cmd.Env = append(os.Environ(), "SAMSA_MUTATIONS="+v, "SAMSA_MUTATIONS_CHILD=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("hw-ignores-isr")
	if err != nil || !strings.Contains(out, "deliberate bugs ON: hw-ignores-isr") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
	out, err = run("no-such-bug")
	if err == nil || !strings.Contains(out, `unknown mutation "no-such-bug"`) {
		t.Fatalf("an unknown name: err %v, output:\n%s", err, out)
	}
}
