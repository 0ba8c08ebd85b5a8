package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Hooks apply faults to any cluster through the user's commands, e.g.
//
//	--fault-cmd 'ssh h{broker} sudo systemctl kill -s KILL kafka' --heal-cmd 'ssh h{broker} sudo systemctl start kafka'
//
// {broker} is the target's broker id, {host} and {port} its advertised address (from
// Metadata), {action} the fault drawn (kill-leader, pause-controller, ...). A command runs with
// `sh -c`; the fault window lasts from the start of --fault-cmd to the end of --heal-cmd.

type hookApplier struct {
	faultCmd, healCmd string
}

// hookTimeout bounds one command.
const hookTimeout = 2 * time.Minute

// expandHook fills the placeholders of a command template; values that are not plain words
// are single-quoted for the shell (a host name comes from the cluster's Metadata).
func expandHook(tmpl, action string, t target) string {
	return strings.NewReplacer(
		"{broker}", strconv.Itoa(int(t.id)),
		"{host}", shellQuote(t.host),
		"{port}", strconv.Itoa(int(t.port)),
		"{action}", shellQuote(action),
	).Replace(tmpl)
}

func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/@%+=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runHook runs one command and describes it (with its output when it fails).
func runHook(ctx context.Context, cmdline string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", cmdline).CombinedOutput()
	detail := "ran: " + cmdline
	if err != nil {
		o := strings.TrimSpace(string(out))
		if len(o) > 300 {
			o = o[len(o)-300:]
		}
		return detail, fmt.Errorf("%s: %v: %s", cmdline, err, o)
	}
	return detail, nil
}

func (h *hookApplier) minHold(string, int32) time.Duration { return 0 }

func (h *hookApplier) apply(ctx context.Context, fault string, t target) (undoFunc, string, error) {
	detail, err := runHook(ctx, expandHook(h.faultCmd, fault, t))
	if err != nil {
		return nil, detail, err
	}
	if h.healCmd == "" {
		return nil, detail, nil
	}
	heal := expandHook(h.healCmd, fault, t)
	return func(ctx context.Context) (string, error) { return runHook(ctx, heal) }, detail, nil
}
