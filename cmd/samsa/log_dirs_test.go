package main

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestLogDirsUsage(t *testing.T) {
	code, _, errb := runTool("log-dirs", "--bootstrap-server", "h:1")
	if code != 1 || !strings.HasPrefix(errb, "Missing required argument \"[describe]\"\n") {
		t.Fatalf("code %d stderr %q", code, errb)
	}
	code, _, errb = runTool("log-dirs", "--describe", "--bootstrap-server", "h:1", "--broker-list", "0,x")
	if code != 1 || errb != "For input string: \"x\"\n" {
		t.Fatalf("code %d stderr %q", code, errb)
	}
}

// Against live brokers with two log dirs each: the three lines, Jackson's key order, every
// replica of the topics asked for in the dir that holds it, and the unknown-broker error.
func TestLogDirsEndToEnd(t *testing.T) {
	t.Parallel()
	c := startToolBrokers(t, 2, 2)
	createToolTopic(t, c, "ld", 4, 2, 3)
	createToolTopic(t, c, "lx", 1, 1, 1)

	code, out, errb := runTool("log-dirs", "--describe", "--bootstrap-server", c.addrs[0], "--topic-list", "ld,")
	if code != 0 || errb != "" {
		t.Fatalf("code %d\n%s\n%s", code, out, errb)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "Querying brokers for log directories information" ||
		lines[1] != "Received log directory information from brokers 0,1" {
		t.Fatalf("output:\n%s", out)
	}
	// The order Jackson writes the tool's HashMaps in.
	if !strings.HasPrefix(lines[2], `{"brokers":[{"broker":0,"logDirs":[{"partitions":[`) || !strings.HasSuffix(lines[2], `],"version":1}`) {
		t.Fatalf("json layout: %s", lines[2])
	}
	if !regexp.MustCompile(`^(\{"partition":"ld-[0-3]","size":[1-9][0-9]*,"offsetLag":0,"isFuture":false\},?)+$`).MatchString(
		strings.Join(regexp.MustCompile(`\{"partition"[^}]*\}`).FindAllString(lines[2], -1), ",")) ||
		!strings.Contains(lines[2], `],"error":null,"logDir":"`) {
		t.Fatalf("json entries: %s", lines[2])
	}
	var doc struct {
		Version int
		Brokers []struct {
			Broker  int
			LogDirs []struct {
				LogDir     string
				Error      *string
				Partitions []struct {
					Partition string
					Size      int64
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[2]), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || len(doc.Brokers) != 2 {
		t.Fatalf("%+v", doc)
	}
	for i, b := range doc.Brokers {
		if b.Broker != i {
			t.Fatalf("broker order: %+v", doc)
		}
		var dirs, parts []string
		for _, d := range b.LogDirs {
			dirs = append(dirs, d.LogDir)
			if d.Error != nil {
				t.Errorf("broker %d dir %s: error %s", i, d.LogDir, *d.Error)
			}
			for _, p := range d.Partitions {
				parts = append(parts, p.Partition)
			}
		}
		sort.Strings(dirs)
		sort.Strings(parts)
		want := append([]string(nil), c.logDirs[i]...)
		sort.Strings(want)
		if strings.Join(dirs, ",") != strings.Join(want, ",") {
			t.Errorf("broker %d dirs %v, want %v", i, dirs, want)
		}
		if strings.Join(parts, ",") != "ld-0,ld-1,ld-2,ld-3" {
			t.Errorf("broker %d partitions %v", i, parts)
		}
	}

	code, out, errb = runTool("log-dirs", "--describe", "--bootstrap-server", c.addrs[0], "--broker-list", "1")
	if code != 0 || !strings.Contains(out, "brokers 1\n") || !strings.Contains(out, `"broker":1,`) || strings.Contains(out, `"broker":0`) {
		t.Fatalf("broker 1: code %d\n%s\n%s", code, out, errb)
	}
	code, out, errb = runTool("log-dirs", "--describe", "--bootstrap-server", c.addrs[0], "--broker-list", "0,5,7")
	if code != 1 || out != "" || errb != "ERROR: The given brokers do not exist from --broker-list: 5,7. Current existent brokers: 0,1\n" {
		t.Fatalf("unknown broker: code %d\n%s\n%s", code, out, errb)
	}
}
