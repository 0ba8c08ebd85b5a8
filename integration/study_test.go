//go:build unix

package integration

// TestStudy runs the study guide's experiments (docs/study/NN-*.md, format in
// study_format_test.go) as a reader would: scripts/cluster.sh starts ZooKeeper and three
// brokers, then every chapter's commands run in file order from the repository root, one
// cluster for all. The chapters show the cluster's default ports and ./.cluster; the test's
// cluster has free ports and its own directory, and the commands and the shown output are
// rewritten to those. `go test -run 'TestStudy/02' ./integration/` runs one chapter.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// studyCommandTimeout bounds one command: experiments are short by design.
const studyCommandTimeout = 90 * time.Second

func TestStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster with scripts/cluster.sh")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	chapters, err := loadStudyChapters(filepath.Join(root, "docs", "study"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ch := range chapters {
		n += len(ch.commands)
	}
	if n == 0 {
		t.Skip("docs/study has no experiments")
	}
	sc := startStudyCluster(t, root)
	for _, ch := range chapters {
		t.Run(ch.name, func(t *testing.T) {
			for _, c := range ch.commands {
				if !sc.run(t, ch, c) {
					break // later commands build on this one
				}
			}
			sc.restoreBrokers(t, ch)
		})
	}
}

// studyCluster is a scripts/cluster.sh running in the background.
type studyCluster struct {
	root, dir string
	env       []string
	rw        *studyRewriter
	script    *exec.Cmd
	done      chan struct{} // closed when the script has exited
	out       *lockedBuffer
}

func startStudyCluster(t *testing.T, root string) *studyCluster {
	t.Helper()
	dir := t.TempDir()
	var zkPort, basePort, httpBasePort int
	for attempt := 0; ; attempt++ {
		var err error
		zkPort, basePort, httpBasePort, err = studyPorts()
		if err == nil {
			break
		}
		if attempt == 20 {
			t.Fatalf("no free ports for the study cluster: %v", err)
		}
	}
	sc := &studyCluster{
		root: root,
		dir:  dir,
		rw:   newStudyRewriter(zkPort, basePort, httpBasePort, dir),
		env: append(os.Environ(),
			"SAMSA_ZK_PORT="+strconv.Itoa(zkPort),
			"SAMSA_BASE_PORT="+strconv.Itoa(basePort),
			"SAMSA_HTTP_BASE_PORT="+strconv.Itoa(httpBasePort),
			"SAMSA_BROKERS=3",
			"SAMSA_HOST=127.0.0.1",
			"SAMSA_CLUSTER_DIR="+dir,
		),
		done: make(chan struct{}),
		out:  &lockedBuffer{},
	}
	cmd := exec.Command("bash", "scripts/cluster.sh")
	cmd.Dir, cmd.Env = root, sc.env
	cmd.SysProcAttr = studySysProcAttr()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start scripts/cluster.sh: %v", err)
	}
	sc.script = cmd
	up := make(chan struct{})
	go func() {
		var once sync.Once
		s := bufio.NewScanner(pr)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			sc.out.Write([]byte(s.Text() + "\n"))
			if strings.Contains(s.Text(), "cluster up:") {
				once.Do(func() { close(up) })
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		close(sc.done)
	}()
	t.Cleanup(sc.stop)
	select {
	case <-up:
	case <-sc.done:
		t.Fatalf("scripts/cluster.sh exited before the cluster was up:\n%s", sc.out.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("scripts/cluster.sh: no cluster within 3 minutes:\n%s", sc.out.String())
	}
	return sc
}

// stop ends the cluster: the brokers are killed (their directory is thrown away, and a clean
// stop of the last broker waits out its controlled-shutdown retries), then the script gets
// SIGTERM and stops ZooKeeper; whatever still runs after that is killed through its pid file.
func (sc *studyCluster) stop() {
	sc.killByPidFiles("broker-*")
	sc.script.Process.Signal(syscall.SIGTERM)
	select {
	case <-sc.done:
	case <-time.After(60 * time.Second):
		syscall.Kill(-sc.script.Process.Pid, syscall.SIGKILL)
	}
	sc.killByPidFiles("*")
}

// killByPidFiles SIGKILLs the cluster's processes whose pid files are in the directories
// matching glob.
func (sc *studyCluster) killByPidFiles(glob string) {
	pids, _ := filepath.Glob(filepath.Join(sc.dir, glob, "*.pid"))
	for _, f := range pids {
		if b, err := os.ReadFile(f); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && studyPidIs(pid, sc.dir) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// studyPidIs tells whether pid is a process started for the cluster in dir (pids get reused).
func studyPidIs(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		out, err := exec.Command("ps", "-p", strconv.Itoa(pid), "-o", "args=").Output()
		if err != nil {
			return false
		}
		b = out
	}
	return bytes.Contains(b, []byte(dir))
}

// run runs one command and checks its output; false when it failed.
func (sc *studyCluster) run(t *testing.T, ch studyChapter, c studyCommand) bool {
	t.Helper()
	text := sc.rw.rewrite(c.text)
	ctx, cancel := context.WithTimeout(context.Background(), studyCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir, cmd.Env = sc.root, sc.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The whole group: a pipeline's processes too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	where := fmt.Sprintf("%s:%d", filepath.Join("docs", "study", filepath.Base(ch.path)), c.line)
	t.Logf("%s: $ %s (%.1fs)", where, c.text, time.Since(start).Seconds())
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", studyCommandTimeout)
	}
	if err != nil {
		t.Errorf("%s: command failed: %v\n$ %s\n--- output:\n%s", where, err, text, out)
		sc.logTails(t)
		return false
	}
	expected := make([]string, len(c.expected))
	for i, e := range c.expected {
		expected[i] = sc.rw.rewrite(e)
	}
	if miss := matchStudyOutput(expected, string(out)); miss != "" {
		t.Errorf("%s: the output of\n$ %s\nhas no line containing (in order after the lines before it)\n    %s\n--- output:\n%s", where, text, miss, out)
		return false
	}
	return true
}

// restoreBrokers checks that the chapter left every broker running, as the format asks, and
// starts the ones it did not (so one failed chapter does not fail the next ones). A chapter
// that failed half-way may also have left a broker stopped with SIGSTOP: all get SIGCONT.
func (sc *studyCluster) restoreBrokers(t *testing.T, ch studyChapter) {
	t.Helper()
	for id := 1; id <= 3; id++ {
		b, err := os.ReadFile(filepath.Join(sc.dir, fmt.Sprintf("broker-%d", id), "broker.pid"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 0 && studyPidIs(pid, sc.dir) {
			syscall.Kill(pid, syscall.SIGCONT)
			continue
		}
		if t.Failed() {
			t.Logf("starting broker %d again after the failure", id)
		} else {
			t.Errorf("%s left broker %d down: a chapter must start again the brokers it stops", ch.name, id)
		}
		cmd := exec.Command("bash", "scripts/cluster.sh", "start-broker", strconv.Itoa(id))
		cmd.Dir, cmd.Env = sc.root, sc.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("start broker %d again: %v\n%s", id, err, out)
		}
	}
}

// logTails logs the end of each broker's log, for a failure in CI.
func (sc *studyCluster) logTails(t *testing.T) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(sc.dir, "broker-*", "broker.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		t.Logf("--- last lines of %s:\n%s", f, strings.Join(lines, "\n"))
	}
}

// studyPorts finds a free ZooKeeper port and two runs of three free ports (brokers, HTTP),
// below Linux's ephemeral range (32768 and up): a broker the chapters stop and start again
// must find its port free, and a port from the ephemeral range may meanwhile become the
// local end of some outgoing connection.
func studyPorts() (zk, base, http int, err error) {
	var hold []net.Listener
	defer func() {
		for _, l := range hold {
			l.Close()
		}
	}()
	grab := func(n int) (int, error) {
		p := 20000 + rand.IntN(12000)
		for i := 0; i < n; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i))
			if err != nil {
				return 0, err
			}
			hold = append(hold, l)
		}
		return p, nil
	}
	if zk, err = grab(1); err != nil {
		return
	}
	if base, err = grab(3); err != nil {
		return
	}
	http, err = grab(3)
	return
}
