package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// BuildSamsa builds the samsa binary at out with the given build tags; run it from inside the
// module (a test's working directory is). BuildSamsa(ctx, out, "samsa_mutations") is the
// deliberately broken build: it reads SAMSA_MUTATIONS at start (internal/mutation/env.go), and
// brokers that `samsa chaos --start-local` starts with it inherit that environment.
func BuildSamsa(ctx context.Context, out string, tags ...string) error {
	args := []string{"build"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "-o", out, "github.com/samsa-kafka/samsa/cmd/samsa")
	if b, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
