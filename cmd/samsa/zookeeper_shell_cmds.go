package main

// The zookeeper-shell commands (ZooKeeper 3.8's org.apache.zookeeper.cli.*Command), with
// their options parsed as commons-cli's DefaultParser does and their output formats.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// cliOpts is a parsed command line: options given (with their values) and the other words,
// the command name first.
type cliOpts struct {
	has  map[string]bool
	val  map[string]string
	args []string
}

// parseCliOpts parses words as DefaultParser with the given single-letter options; withArg
// names those taking a value. Numbers such as -1 are arguments, "--" ends the options.
func parseCliOpts(words []string, noArg, withArg string) (*cliOpts, error) {
	o := &cliOpts{has: map[string]bool{}, val: map[string]string{}}
	known := func(c string) bool { return strings.Contains(noArg, c) || strings.Contains(withArg, c) }
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			o.args = append(o.args, words[i+1:]...)
			break
		}
		if len(w) < 2 || w[0] != '-' {
			o.args = append(o.args, w)
			continue
		}
		if _, err := strconv.ParseFloat(w, 64); err == nil && !known(w[1:2]) {
			o.args = append(o.args, w)
			continue
		}
		name := w[1:]
		switch {
		case len(name) == 1 && strings.Contains(withArg, name):
			if i+1 >= len(words) {
				return nil, cliErr("org.apache.commons.cli.MissingArgumentException: Missing argument for option: %s", name)
			}
			i++
			o.has[name], o.val[name] = true, words[i]
		case len(name) == 1 && strings.Contains(noArg, name):
			o.has[name] = true
		case strings.Contains(withArg, name[:1]):
			o.has[name[:1]], o.val[name[:1]] = true, name[1:] // -t100
		default:
			for _, c := range name { // concatenated flags: -es
				if !strings.ContainsRune(noArg, c) {
					return nil, cliErr("org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: %s", w)
				}
			}
			for _, c := range name {
				o.has[string(c)] = true
			}
		}
	}
	return o, nil
}

// runCliCommand runs one of the cli.*Command classes.
func (sh *zkShell) runCliCommand(cmd string, words []string) error {
	usage := func() error { return cliErr("%s %s", cmd, zkShellCommands[cmd]) }
	switch cmd {
	case "ls":
		o, err := parseCliOpts(words, "?swR", "")
		if err != nil {
			return err
		}
		if o.has["?"] {
			fmt.Fprintln(sh.out, "usage: ls [options] path\n -?   help\n -R   recurse\n -s   stat\n -w   watch")
		}
		if len(o.args) > 2 {
			fmt.Fprintln(sh.err, "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.")
			o.has["w"] = true
		}
		if len(o.args) < 2 {
			return usage()
		}
		return sh.ls(o.args[1], o.has["w"], o.has["s"], o.has["R"])
	case "get":
		o, err := parseCliOpts(words, "sw", "")
		if err != nil {
			return err
		}
		if len(o.args) < 2 {
			return usage()
		}
		if len(o.args) > 2 {
			fmt.Fprintln(sh.err, "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.")
			o.has["w"] = true
		}
		return sh.get(o.args[1], o.has["w"], o.has["s"])
	case "stat":
		o, err := parseCliOpts(words, "w", "")
		if err != nil {
			return err
		}
		if len(o.args) < 2 {
			return usage()
		}
		if len(o.args) > 2 {
			fmt.Fprintln(sh.err, "'stat path [watch]' has been deprecated. Please use 'stat [-w] path' instead.")
			o.has["w"] = true
		}
		return sh.stat(o.args[1], o.has["w"])
	case "create":
		o, err := parseCliOpts(words, "esc", "t")
		if err != nil {
			return err
		}
		if len(o.args) < 2 {
			return usage()
		}
		return sh.create(o)
	case "set":
		o, err := parseCliOpts(words, "s", "v")
		if err != nil {
			return err
		}
		if len(o.args) < 3 {
			return usage()
		}
		version, err := zkVersionOpt(o)
		if err != nil {
			return err
		}
		path := o.args[1]
		if err := validateZkPath(path); err != nil {
			return err
		}
		st, err := sh.conn.Set(sh.abs(path), []byte(o.args[2]), version)
		if err != nil {
			return keeperErr(err, path)
		}
		if o.has["s"] {
			sh.printStat(st)
		}
	case "delete":
		o, err := parseCliOpts(words, "", "v")
		if err != nil {
			return err
		}
		if len(o.args) < 2 {
			return usage()
		}
		if len(o.args) > 2 {
			fmt.Fprintln(sh.err, "'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.")
		}
		version, err := zkVersionOpt(o)
		if err != nil {
			return err
		}
		path := o.args[1]
		if err := validateZkPath(path); err != nil {
			return err
		}
		if err := sh.conn.Delete(sh.abs(path), version); err != nil {
			return keeperErr(err, path)
		}
	case "deleteall":
		o, err := parseCliOpts(words, "", "b")
		if err != nil {
			return err
		}
		if len(o.args) < 2 {
			return usage()
		}
		batch := 1000
		if o.has["b"] {
			if batch, err = strconv.Atoi(o.val["b"]); err != nil {
				return cliErr("-b argument must be an int value")
			}
		}
		return sh.deleteAll(o.args[1], batch)
	case "getAcl":
		o, err := parseCliOpts(words, "s", "")
		if err != nil {
			return err
		}
		if len(o.args) < 2 {
			return usage()
		}
		path := o.args[1]
		if err := validateZkPath(path); err != nil {
			return err
		}
		acl, st, err := sh.conn.GetACL(sh.abs(path))
		if err != nil {
			return keeperErr(err, path)
		}
		for _, a := range acl {
			// Id.toString is jute's CSV record: 'scheme,'id and a newline.
			fmt.Fprintf(sh.out, "'%s,'%s\n: %s\n", zkCSV(a.Scheme), zkCSV(a.ID), zkPermString(a.Perms))
		}
		if o.has["s"] {
			sh.printStat(st)
		}
	case "setAcl":
		o, err := parseCliOpts(words, "sR", "v")
		if err != nil {
			return err
		}
		if len(o.args) < 3 {
			return usage()
		}
		acl := sh.parseACL(o.args[2])
		version, err := zkVersionOpt(o)
		if err != nil {
			return err
		}
		path := o.args[1]
		if o.has["R"] {
			return sh.visitDFS(path, false, func(p string) {
				if _, err := sh.conn.SetACL(sh.abs(p), acl, version); err != nil {
					fmt.Fprint(sh.out, zkKeeperMessage(err, p))
				}
			})
		}
		if err := validateZkPath(path); err != nil {
			return err
		}
		st, err := sh.conn.SetACL(sh.abs(path), acl, version)
		if err != nil {
			return keeperErr(err, path)
		}
		if o.has["s"] {
			sh.printStat(st)
		}
	case "sync":
		if len(words) < 2 {
			return usage()
		}
		if err := validateZkPath(words[1]); err != nil {
			return err
		}
		if _, err := sh.conn.Sync(sh.abs(words[1])); err != nil {
			fmt.Fprintf(sh.out, "Sync has failed. rc=%s\n", zkKeeperMessage(err, words[1]))
			return nil
		}
		fmt.Fprintln(sh.out, "Sync is OK")
	case "addauth":
		if len(words) < 2 {
			return usage()
		}
		var auth []byte
		if len(words) >= 3 {
			auth = []byte(words[2])
		}
		if err := sh.conn.AddAuth(words[1], auth); err != nil {
			fmt.Fprintln(sh.err, zkKeeperMessage(err, "/"))
		}
	case "getAllChildrenNumber":
		if len(words) < 2 {
			return usage()
		}
		n := -1 // the node itself is not counted
		if err := sh.visitDFS(words[1], false, func(string) { n++ }); err != nil {
			return err
		}
		fmt.Fprintln(sh.out, n)
	case "close":
		sh.close()
	case "version":
		fmt.Fprintln(sh.out, "ZooKeeper CLI version: 3.8.4 (samsa zookeeper-shell)")
	case "connect", "quit", "redo", "history", "printwatches":
	default:
		return cliErr("%s is not supported by samsa zookeeper-shell", cmd)
	}
	return nil
}

// zkVersionOpt reads -v as Integer.parseInt, -1 (any version) when absent.
func zkVersionOpt(o *cliOpts) (int32, error) {
	if !o.has["v"] {
		return -1, nil
	}
	v, err := strconv.ParseInt(o.val["v"], 10, 32)
	if err != nil {
		return 0, cliErr("For input string: \"%s\"", o.val["v"])
	}
	return int32(v), nil
}

func (sh *zkShell) ls(path string, watch, withStat, recursive bool) error {
	if err := validateZkPath(path); err != nil {
		return err
	}
	if recursive {
		return sh.visitDFS(path, watch, func(p string) { fmt.Fprintln(sh.out, p) })
	}
	var children []string
	var st *zk.Stat
	var err error
	if watch {
		var ch <-chan zk.Event
		children, st, ch, err = sh.conn.ChildrenW(sh.abs(path))
		if err == nil {
			sh.watch(ch)
		}
	} else {
		children, st, err = sh.conn.Children(sh.abs(path))
	}
	if err != nil {
		return keeperErr(err, path)
	}
	sort.Strings(children)
	fmt.Fprintf(sh.out, "[%s]\n", strings.Join(children, ", "))
	if withStat {
		sh.printStat(st)
	}
	return nil
}

// visitDFS is ZKUtil.visitSubTreeDFS: the node, then each level's children (sorted) before
// their subtrees; nodes deleted meanwhile are skipped.
func (sh *zkShell) visitDFS(path string, watch bool, fn func(string)) error {
	if err := validateZkPath(path); err != nil {
		return err
	}
	if err := sh.getData(path, watch); err != nil {
		return keeperErr(err, path)
	}
	fn(path)
	var helper func(p string) error
	helper = func(p string) error {
		children, err := sh.children(p, watch)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return keeperErr(err, p)
		}
		sort.Strings(children)
		prefix := p + "/"
		if p == "/" {
			prefix = "/"
		}
		for _, c := range children {
			fn(prefix + c)
		}
		for _, c := range children {
			if err := helper(prefix + c); err != nil {
				return err
			}
		}
		return nil
	}
	return helper(path)
}

func (sh *zkShell) getData(path string, watch bool) error {
	if !watch {
		_, _, err := sh.conn.Get(sh.abs(path))
		return err
	}
	_, _, ch, err := sh.conn.GetW(sh.abs(path))
	if err == nil {
		sh.watch(ch)
	}
	return err
}

func (sh *zkShell) children(path string, watch bool) ([]string, error) {
	if !watch {
		c, _, err := sh.conn.Children(sh.abs(path))
		return c, err
	}
	c, _, ch, err := sh.conn.ChildrenW(sh.abs(path))
	if err == nil {
		sh.watch(ch)
	}
	return c, err
}

func (sh *zkShell) get(path string, watch, withStat bool) error {
	if err := validateZkPath(path); err != nil {
		return err
	}
	var data []byte
	var st *zk.Stat
	var err error
	if watch {
		var ch <-chan zk.Event
		data, st, ch, err = sh.conn.GetW(sh.abs(path))
		if err == nil {
			sh.watch(ch)
		}
	} else {
		data, st, err = sh.conn.Get(sh.abs(path))
	}
	if err != nil {
		return keeperErr(err, path)
	}
	if data == nil {
		data = []byte("null")
	}
	fmt.Fprintln(sh.out, string(data))
	if withStat {
		sh.printStat(st)
	}
	return nil
}

func (sh *zkShell) stat(path string, watch bool) error {
	if err := validateZkPath(path); err != nil {
		return err
	}
	var ok bool
	var st *zk.Stat
	var err error
	if watch {
		var ch <-chan zk.Event
		ok, st, ch, err = sh.conn.ExistsW(sh.abs(path))
		if err == nil {
			sh.watch(ch)
		}
	} else {
		ok, st, err = sh.conn.Exists(sh.abs(path))
	}
	if err != nil {
		return keeperErr(err, path)
	}
	if !ok {
		return keeperErr(zk.ErrNoNode, path)
	}
	sh.printStat(st)
	return nil
}

// create is CreateCommand: the created path goes to stderr.
func (sh *zkShell) create(o *cliOpts) error {
	e, s, c, t := o.has["e"], o.has["s"], o.has["c"], o.has["t"]
	if c && (e || s) {
		return cliErr("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if t {
		var err error
		if ttl, err = strconv.ParseInt(o.val["t"], 10, 64); err != nil {
			return cliErr("-t argument must be a long value")
		}
	}
	if t && e {
		return cliErr("TTLs cannot be used with Ephemeral znodes")
	}
	if t && c {
		return cliErr("TTLs cannot be used with Container znodes")
	}
	var flags int32
	switch {
	case e && s:
		flags = zk.FlagEphemeralSequential
	case e:
		flags = zk.FlagEphemeral
	case s && t:
		flags = zk.FlagPersistentSequentialWithTTL
	case s:
		flags = zk.FlagSequence
	case c:
		flags = zk.FlagContainer
	case t:
		flags = zk.FlagTTL
	}
	if t && (ttl <= 0 || ttl > 0xFFFFFFFFFF) { // EphemeralType.TTL.toEphemeralOwner
		return cliErr("ttl must be positive and cannot be larger than: %d", int64(0xFFFFFFFFFF))
	}
	path := o.args[1]
	check := path
	if s {
		check += "1"
	}
	if err := validateZkPath(check); err != nil {
		return err
	}
	var data []byte
	if len(o.args) > 2 {
		data = []byte(o.args[2])
	}
	acl := zk.WorldACL(zk.PermAll) // OPEN_ACL_UNSAFE
	if len(o.args) > 3 {
		acl = sh.parseACL(o.args[3])
	}
	var created string
	var err error
	switch {
	case t:
		created, err = sh.conn.CreateTTL(sh.abs(path), data, flags, acl, time.Duration(ttl)*time.Millisecond)
	case c:
		created, err = sh.conn.CreateContainer(sh.abs(path), data, flags, acl)
	default:
		created, err = sh.conn.Create(sh.abs(path), data, flags, acl)
	}
	if err != nil {
		if errors.Is(err, zk.ErrInvalidACL) {
			fmt.Fprintln(sh.err, "KeeperErrorCode = InvalidACL for "+path)
		}
		return keeperErr(err, path)
	}
	fmt.Fprintln(sh.err, "Created "+sh.rel(created))
	return nil
}

// deleteAll is DeleteAllCommand (ZKUtil.deleteRecursive): the subtree listed breadth first,
// deleted leaves first in multi batches; a failed batch stops it with a message, exit 0.
func (sh *zkShell) deleteAll(path string, batch int) error {
	if err := validateZkPath(path); err != nil {
		return err
	}
	tree := []string{path}
	for i := 0; i < len(tree); i++ {
		children, _, err := sh.conn.Children(sh.abs(tree[i]))
		if err != nil {
			return keeperErr(err, tree[i])
		}
		for _, c := range children {
			p := tree[i] + "/" + c
			if tree[i] == "/" {
				p = "/" + c
			}
			tree = append(tree, p)
		}
	}
	if batch <= 0 {
		for i := len(tree) - 1; i >= 0; i-- {
			if err := sh.conn.Delete(sh.abs(tree[i]), -1); err != nil {
				return keeperErr(err, tree[i])
			}
		}
		return nil
	}
	var ops []any
	for i := len(tree) - 1; i >= 0; i-- {
		ops = append(ops, &zk.DeleteRequest{Path: sh.abs(tree[i]), Version: -1})
		if len(ops) == batch || i == 0 {
			if _, err := sh.conn.Multi(ops...); err != nil {
				fmt.Fprintln(sh.err, "Failed to delete some node(s) in the subtree!")
				return nil
			}
			ops = nil
		}
	}
	return nil
}

// parseACL is AclParser.parse: "scheme:id:perms,..."; malformed entries are reported and
// skipped.
func (sh *zkShell) parseACL(s string) []zk.ACL {
	var acl []zk.ACL
	for _, a := range strings.Split(s, ",") {
		first, last := strings.IndexByte(a, ':'), strings.LastIndexByte(a, ':')
		if first == -1 || first == last {
			fmt.Fprintln(sh.err, a+" does not have the form scheme:id:perm")
			continue
		}
		var perms int32
		for _, c := range a[last+1:] {
			switch c {
			case 'r':
				perms |= zk.PermRead
			case 'w':
				perms |= zk.PermWrite
			case 'c':
				perms |= zk.PermCreate
			case 'd':
				perms |= zk.PermDelete
			case 'a':
				perms |= zk.PermAdmin
			default:
				fmt.Fprintf(sh.err, "Unknown perm type: %c\n", c)
			}
		}
		acl = append(acl, zk.ACL{Perms: perms, Scheme: a[:first], ID: a[first+1 : last]})
	}
	return acl
}

// zkPermString is ZKUtil.getPermString.
func zkPermString(p int32) string {
	var b strings.Builder
	for _, x := range []struct {
		bit int32
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// zkCSV is jute's Utils.toCSVString without the leading quote.
func zkCSV(s string) string {
	r := strings.NewReplacer("\x00", "%00", "\n", "%0A", "\r", "%0D", ",", "%2C", "}", "%7D", "%", "%25")
	return r.Replace(s)
}

// printStat is StatPrinter.
func (sh *zkShell) printStat(st *zk.Stat) {
	if st == nil {
		st = &zk.Stat{}
	}
	date := func(ms int64) string { return time.UnixMilli(ms).Format("Mon Jan 02 15:04:05 MST 2006") }
	fmt.Fprintf(sh.out, "cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\ncversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\ndataLength = %d\nnumChildren = %d\n",
		uint64(st.Czxid), date(st.Ctime), uint64(st.Mzxid), date(st.Mtime), uint64(st.Pzxid), st.Cversion, st.Version, st.Aversion,
		uint64(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

// watch prints the event of a one-shot watch when it fires.
func (sh *zkShell) watch(ch <-chan zk.Event) {
	sh.watchers.Add(1)
	go func() {
		defer sh.watchers.Done()
		ev, ok := <-ch
		if !ok || ev.Type == zk.EventNotWatching {
			return
		}
		types := map[zk.EventType]string{zk.EventNodeCreated: "NodeCreated", zk.EventNodeDeleted: "NodeDeleted",
			zk.EventNodeDataChanged: "NodeDataChanged", zk.EventNodeChildrenChanged: "NodeChildrenChanged"}
		typ, ok := types[ev.Type]
		if !ok {
			return
		}
		sh.watchedEvent("SyncConnected", typ, sh.rel(ev.Path))
	}()
}
