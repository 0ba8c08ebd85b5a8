package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-kafka/samsa/internal/zktest"
)

// straceConsume starts a samsa broker, fills a topic with 10 KiB records, then attaches
// strace to the broker twice during a consume of the whole topic: once with -c (the syscall
// summary) and once tracing the syscalls that can carry bytes to a socket, summing their
// return values, which shows whether sendfile or write/writev moved the record bytes.
func straceConsume(ctx context.Context, o options, dir string, zk *zktest.Server) (string, error) {
	if _, err := exec.LookPath("strace"); err != nil {
		return "", fmt.Errorf("strace not found: apt-get install -y strace")
	}
	t, err := startTarget(ctx, o, dir, zk, "samsa", 99)
	if err != nil {
		return "", err
	}
	defer t.stop()
	topic := "bench-strace"
	if err := createTopic(ctx, t.bootstrap, topic, 1, 1); err != nil {
		return "", err
	}
	n := o.large
	if _, err := produceKgo(ctx, t.bootstrap, topic, n, 10240, false, ""); err != nil {
		return "", err
	}
	pid := strconv.Itoa(t.pids[0])
	var b strings.Builder
	fmt.Fprintf(&b, "\n## strace of the samsa broker during a consume of %d × 10 KiB records (%.1f MiB)\n\n", n, float64(n*10240)/(1<<20))

	summary := filepath.Join(dir, "strace-c.txt")
	if err := underStrace(ctx, []string{"-f", "-c", "-o", summary, "-p", pid}, func() error {
		_, err := consumeKgo(ctx, t.bootstrap, topic, 1, n)
		return err
	}); err != nil {
		return "", err
	}
	sum, err := os.ReadFile(summary)
	if err != nil {
		return "", err
	}
	b.WriteString("`strace -f -c -p <broker>`:\n\n```\n")
	b.Write(sum)
	b.WriteString("```\n\n")

	trace := filepath.Join(dir, "strace-bytes.txt")
	if err := underStrace(ctx, []string{"-f", "-e", "trace=sendfile,write,writev,sendmsg,sendto,pwrite64,pread64,read,readv,splice",
		"-e", "signal=none", "-o", trace, "-p", pid}, func() error {
		_, err := consumeKgo(ctx, t.bootstrap, topic, 1, n)
		return err
	}); err != nil {
		return "", err
	}
	bytes, calls, err := sumSyscallBytes(trace)
	if err != nil {
		return "", err
	}
	b.WriteString("Bytes returned per syscall during a second consume (`strace -f -e trace=sendfile,write,writev,… -p <broker>`):\n\n")
	b.WriteString("| syscall | calls | bytes |\n|---|---:|---:|\n")
	var names []string
	for k := range calls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", k, calls[k], bytes[k])
	}
	if bytes["sendfile"] >= n*10240/2 {
		b.WriteString("\nsendfile carried the record bytes.\n")
	} else {
		fmt.Fprintf(&b, "\nsendfile did NOT carry the record bytes (sendfile: %d bytes); they went through user space.\n", bytes["sendfile"])
	}
	return b.String(), nil
}

// underStrace attaches strace with args, runs fn, then detaches (SIGINT) and waits for the
// output file to be complete.
func underStrace(ctx context.Context, args []string, fn func() error) error {
	cmd := exec.CommandContext(ctx, "strace", args...)
	cmd.SysProcAttr = childSysProcAttr()
	errb := &strings.Builder{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		return err
	}
	time.Sleep(time.Second) // attach to every thread before the workload starts
	ferr := fn()
	cmd.Process.Signal(syscall.SIGINT)
	werr := cmd.Wait()
	if ferr != nil {
		return ferr
	}
	if werr != nil && !strings.Contains(werr.Error(), "signal: interrupt") && cmd.ProcessState.ExitCode() > 1 {
		return fmt.Errorf("strace %v: %v: %s", args, werr, errb.String())
	}
	return nil
}

var (
	syscallDone    = regexp.MustCompile(`^(?:\[pid\s+\d+\]\s+)?(?:\d+\s+)?(\w+)\(.*\)\s+=\s+(-?\d+)`)
	syscallResumed = regexp.MustCompile(`<\.\.\. (\w+) resumed>.*\)\s+=\s+(-?\d+)`)
)

// sumSyscallBytes sums positive return values per syscall in an strace -f log.
func sumSyscallBytes(path string) (bytes, calls map[string]int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	bytes, calls = map[string]int64{}, map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		m := syscallResumed.FindStringSubmatch(line)
		if m == nil {
			if strings.Contains(line, "<unfinished ...>") {
				continue
			}
			m = syscallDone.FindStringSubmatch(line)
		}
		if m == nil {
			continue
		}
		calls[m[1]]++
		if v, _ := strconv.ParseInt(m[2], 10, 64); v > 0 {
			bytes[m[1]] += v
		}
	}
	return bytes, calls, sc.Err()
}
