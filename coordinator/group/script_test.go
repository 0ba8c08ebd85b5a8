package group

// Scripted scenarios (etcd raft's interaction tests): testdata/*.script holds commands and,
// after each, the events it caused; `go test -run TestScripts -rewrite` regenerates them and
// the diff is reviewed. Commands:
//
//	join NAME [static=INSTANCE] [protocols=p1,p2] [type=consumer]   (a new dynamic member
//	                                      does the KIP-394 MEMBER_ID_REQUIRED round trip)
//	sync NAME [assign=a:x,b:y] [gen=N]    heartbeat NAME [gen=N]     leave NAME
//	commit NAME t-p=offset [gen=N]        fetch                       advance DURATION
//	state
//
// Member ids are random UUIDs; the output shows member names instead.

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.script with the current output")

type scriptEnv struct {
	*env
	mu     sync.Mutex
	ids    map[string]string // name -> member id
	names  map[string]string // member id -> name
	gen    map[string]int32  // name -> generation of its last join
	events []string
}

func (s *scriptEnv) name(id string) string {
	if n, ok := s.names[id]; ok {
		return n
	}
	if id == "" {
		return `""`
	}
	return id
}

// errName is Kafka's error name (kerr's Message is the name, e.g. UNKNOWN_MEMBER_ID).
func errName(e *kerr.Error) string {
	if e == nil {
		return "NONE"
	}
	return e.Message
}

func (s *scriptEnv) emit(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, fmt.Sprintf(format, a...))
}

func (s *scriptEnv) joinCallback(name string) func(JoinResult) {
	return func(r JoinResult) {
		s.mu.Lock()
		if r.MemberID != "" {
			s.ids[name], s.names[r.MemberID] = r.MemberID, name
		}
		s.gen[name] = r.GenerationID
		s.mu.Unlock()
		if r.Err != nil {
			s.emit("%s: join %s", name, errName(r.Err))
			return
		}
		var members []string
		for _, m := range r.Members {
			members = append(members, s.name(m.MemberID))
		}
		sort.Strings(members)
		proto := ""
		if r.ProtocolName != nil {
			proto = *r.ProtocolName
		}
		line := fmt.Sprintf("%s: join gen=%d leader=%s protocol=%s", name, r.GenerationID, s.name(r.LeaderID), proto)
		if len(members) > 0 {
			line += " members=[" + strings.Join(members, " ") + "]"
		}
		s.emit("%s", line)
	}
}

func (s *scriptEnv) run(t *testing.T, cmd string, args map[string]string, pos []string) {
	name := ""
	if len(pos) > 0 {
		name = pos[0]
	}
	genOf := func() int32 {
		if g, ok := args["gen"]; ok {
			n, _ := strconv.Atoi(g)
			return int32(n)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.gen[name]
	}
	s.mu.Lock()
	id := s.ids[name]
	s.mu.Unlock()
	var instance *string
	if v, ok := args["static"]; ok {
		instance = &v
	}
	switch cmd {
	case "join":
		protos := []Protocol{{Name: "range", Metadata: consumerMeta("t")}}
		if p, ok := args["protocols"]; ok {
			protos = nil
			for _, n := range strings.Split(p, ",") {
				protos = append(protos, Protocol{Name: n, Metadata: consumerMeta("t")})
			}
		}
		ptype := "consumer"
		if v, ok := args["type"]; ok {
			ptype = v
		}
		req := JoinRequest{GroupID: testGroup, MemberID: id, GroupInstanceID: instance, RequireKnownMemberID: true,
			ClientID: name, ClientHost: "/127.0.0.1", SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
			ProtocolType: ptype, Protocols: protos}
		if id == "" && instance == nil {
			var first JoinResult
			s.c.HandleJoinGroup(req, func(r JoinResult) { first = r })
			if first.Err != kerr.MemberIDRequired {
				s.joinCallback(name)(first)
				return
			}
			s.mu.Lock()
			s.ids[name], s.names[first.MemberID] = first.MemberID, name
			s.mu.Unlock()
			req.MemberID = first.MemberID
		}
		s.c.HandleJoinGroup(req, s.joinCallback(name))
	case "sync":
		assign := map[string][]byte{}
		if a, ok := args["assign"]; ok {
			for _, kv := range strings.Split(a, ",") {
				k, v, _ := strings.Cut(kv, ":")
				s.mu.Lock()
				assign[s.ids[k]] = []byte(v)
				s.mu.Unlock()
			}
		}
		s.c.HandleSyncGroup(SyncRequest{GroupID: testGroup, GenerationID: genOf(), MemberID: id, GroupInstanceID: instance,
			Assignments: assign}, func(r SyncResult) {
			if r.Err != nil {
				s.emit("%s: sync %s", name, errName(r.Err))
				return
			}
			s.emit("%s: sync assignment=%q", name, r.Assignment)
		})
	case "heartbeat":
		s.emit("%s: heartbeat %s", name, errName(s.c.Heartbeat(testGroup, id, instance, genOf())))
	case "leave":
		top, errs := s.c.LeaveGroup(testGroup, []MemberIdentity{{MemberID: id, GroupInstanceID: instance}})
		if top != nil {
			s.emit("%s: leave %s", name, errName(top))
		} else {
			s.emit("%s: leave %s", name, errName(errs[0]))
		}
	case "commit":
		offs := map[TopicPartition]OffsetAndMetadata{}
		for k, v := range args {
			if t, p, ok := strings.Cut(k, "-"); ok {
				pn, _ := strconv.Atoi(p)
				off, _ := strconv.ParseInt(v, 10, 64)
				offs[TopicPartition{t, int32(pn)}] = OffsetAndMetadata{Offset: off, LeaderEpoch: -1, ExpireTimestamp: -1}
			}
		}
		gen := genOf()
		if name == "-" {
			id, gen = "", -1
		}
		s.c.HandleCommitOffsets(CommitRequest{GroupID: testGroup, MemberID: id, GroupInstanceID: instance, GenerationID: gen,
			Offsets: offs}, func(r map[TopicPartition]*kerr.Error) {
			var parts []string
			for tp, err := range r {
				parts = append(parts, fmt.Sprintf("%s-%d=%s", tp.Topic, tp.Partition, errName(err)))
			}
			sort.Strings(parts)
			s.emit("%s: commit %s", name, strings.Join(parts, " "))
		})
	case "fetch":
		offs, err := s.c.FetchOffsets(testGroup, nil, false)
		var parts []string
		for _, o := range offs {
			parts = append(parts, fmt.Sprintf("%s-%d=%d", o.TP.Topic, o.TP.Partition, o.Offset))
		}
		sort.Strings(parts)
		s.emit("fetch %s %s", errName(err), strings.Join(parts, " "))
	case "advance":
		d, err := time.ParseDuration(name)
		if err != nil {
			t.Fatalf("advance %q: %v", name, err)
		}
		s.clock.mu.Lock()
		s.clock.now = s.clock.now.Add(d)
		s.clock.mu.Unlock()
		s.c.FireDueTimers()
	case "state":
		g := s.c.getGroup(testGroup)
		if g == nil {
			s.emit("state: no group")
			return
		}
		g.mu.Lock()
		var members []string
		for _, m := range g.allMembers() {
			members = append(members, s.name(m.MemberID))
		}
		sort.Strings(members)
		line := fmt.Sprintf("state: %s gen=%d leader=%s members=[%s]", g.state, g.generationID, s.name(g.leaderOrEmpty()), strings.Join(members, " "))
		g.mu.Unlock()
		s.emit("%s", line)
	default:
		t.Fatalf("unknown command %q", cmd)
	}
	s.settle()
}

func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.script")
	if len(files) == 0 {
		t.Fatal("no testdata/*.script")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s := &scriptEnv{env: newEnv(t, nil), ids: map[string]string{}, names: map[string]string{}, gen: map[string]int32{}}
			f, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			sc := bufio.NewScanner(strings.NewReader(string(f)))
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "  ") { // expected output of the previous command
					continue
				}
				out.WriteString(line + "\n")
				fields := strings.Fields(line)
				if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
					continue
				}
				args, pos := map[string]string{}, []string{}
				for _, f := range fields[1:] {
					if k, v, ok := strings.Cut(f, "="); ok {
						args[k] = v
					} else {
						pos = append(pos, f)
					}
				}
				s.run(t, fields[0], args, pos)
				s.mu.Lock()
				for _, ev := range s.events {
					out.WriteString("  " + ev + "\n")
				}
				s.events = nil
				s.mu.Unlock()
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := out.String(); got != string(f) {
				t.Errorf("%s differs (run with -rewrite and review the diff):\n%s", file, got)
			}
		})
	}
}
