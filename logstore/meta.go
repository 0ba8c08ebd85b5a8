package logstore

// Log-dir root files: meta.properties (Kafka's MetaProperties v0 / MetaPropertiesEnsemble)
// and the clean-shutdown marker (Kafka's CleanShutdownFileHandler).
//
// meta.properties as Java's Properties.store writes it in ZooKeeper mode:
//
//	#
//	#Wed Dec 02 14:51:09 UTC 2026
//	cluster.id=Y3oG2bpUQgyTXjIMq1dUOQ
//	version=0
//	broker.id=1

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Root file names of a log dir.
const (
	MetaPropertiesFile    = "meta.properties"
	LockFile              = ".lock"
	CleanShutdownFile     = ".kafka_cleanshutdown"
	cleanShutdownContents = `{"version":0,"brokerEpoch":-1}`
)

// MetaProperties is the content of a v0 meta.properties file.
type MetaProperties struct {
	Version   int
	BrokerID  int32
	ClusterID string // empty when the file has none
}

// EncodeMetaProperties renders m as Java's Properties.store(w, "") does: an empty comment
// line, a date comment line in java.util.Date's format, then key=value lines.
func EncodeMetaProperties(m MetaProperties, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString("#\n#")
	b.WriteString(now.Format("Mon Jan 02 15:04:05 MST 2006"))
	b.WriteByte('\n')
	if m.ClusterID != "" {
		b.WriteString("cluster.id=" + m.ClusterID + "\n")
	}
	b.WriteString("version=" + strconv.Itoa(m.Version) + "\n")
	b.WriteString("broker.id=" + strconv.FormatInt(int64(m.BrokerID), 10) + "\n")
	return b.Bytes()
}

// parseJavaProperties reads the subset of java.util.Properties syntax Kafka's files use:
// '#'/'!' comments, key=value or key:value, surrounding blanks trimmed.
func parseJavaProperties(data []byte) map[string]string {
	props := make(map[string]string)
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[line] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return props
}

// ReadMetaProperties reads <dir>/meta.properties. found is false if it does not exist.
// Only v0 (ZooKeeper mode) is accepted; a KRaft v1 file is an ErrMetaMismatch.
func ReadMetaProperties(fsys FS, dir string) (m MetaProperties, found bool, err error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := readFileFS(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read %s: %w", path, err)
	}
	props := parseJavaProperties(data)
	v, ok := props["version"]
	if !ok {
		return m, true, fmt.Errorf("%s: no version: %w", path, ErrMetaMismatch)
	}
	m.Version, err = strconv.Atoi(v)
	if err != nil {
		return m, true, fmt.Errorf("%s: bad version %q: %w", path, v, ErrMetaMismatch)
	}
	if m.Version != 0 {
		return m, true, fmt.Errorf("%s: version %d (KRaft) is not supported in ZooKeeper mode: %w", path, m.Version, ErrMetaMismatch)
	}
	id, ok := props["broker.id"]
	if !ok {
		return m, true, fmt.Errorf("%s: no broker.id: %w", path, ErrMetaMismatch)
	}
	bid, err := strconv.ParseInt(id, 10, 32)
	if err != nil {
		return m, true, fmt.Errorf("%s: bad broker.id %q: %w", path, id, ErrMetaMismatch)
	}
	m.BrokerID = int32(bid)
	m.ClusterID = props["cluster.id"]
	return m, true, nil
}

// WriteMetaProperties atomically writes <dir>/meta.properties.
func WriteMetaProperties(fsys FS, dir string, m MetaProperties, now time.Time) error {
	if err := WriteFileAtomic(fsys, filepath.Join(dir, MetaPropertiesFile), EncodeMetaProperties(m, now)); err != nil {
		return fmt.Errorf("write meta.properties: %w", err)
	}
	return nil
}

// ReadMetaBrokerID returns the broker.id stored in the dirs' meta.properties (for
// broker.id=-1 before ZooKeeper registration). found is false when no dir has one. Dirs
// that disagree are an ErrMetaMismatch, as in Kafka's MetaPropertiesEnsemble.verify.
func ReadMetaBrokerID(dirs []string) (int32, bool, error) {
	var (
		id    int32
		found bool
		from  string
	)
	for _, dir := range dirs {
		m, ok, err := ReadMetaProperties(OSFS{}, dir)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			continue
		}
		if found && m.BrokerID != id {
			return 0, false, fmt.Errorf("stored broker.id %d in %s doesn't match broker.id %d in %s: %w",
				m.BrokerID, dir, id, from, ErrMetaMismatch)
		}
		id, found, from = m.BrokerID, true, dir
	}
	return id, found, nil
}

// checkMetaProperties verifies every dir's meta.properties against the broker's id and
// cluster id (empty clusterID = not known yet), writing the file where it is missing.
// Mismatch messages follow Kafka's InconsistentBrokerIdException and
// InconsistentClusterIdException.
func checkMetaProperties(fsys FS, dirs []string, brokerID int32, clusterID string, now time.Time) error {
	var missing []string
	for _, dir := range dirs {
		m, ok, err := ReadMetaProperties(fsys, dir)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, dir)
			continue
		}
		if m.BrokerID != brokerID {
			return fmt.Errorf("configured broker.id %d doesn't match stored broker.id %d in %s; if you moved your data, make sure your configured broker.id matches; if you intend to create a new broker, remove all data in log.dirs: %w",
				brokerID, m.BrokerID, filepath.Join(dir, MetaPropertiesFile), ErrMetaMismatch)
		}
		if clusterID != "" && m.ClusterID != "" && m.ClusterID != clusterID {
			return fmt.Errorf("the cluster id %s doesn't match stored cluster.id %s in %s; the broker is trying to join the wrong cluster (zookeeper.connect may be wrong): %w",
				clusterID, m.ClusterID, filepath.Join(dir, MetaPropertiesFile), ErrMetaMismatch)
		}
		if clusterID != "" && m.ClusterID == "" {
			missing = append(missing, dir) // rewrite with the cluster id, as Kafka's checkpointBrokerMetadata does
		}
	}
	for _, dir := range missing {
		if err := WriteMetaProperties(fsys, dir, MetaProperties{Version: 0, BrokerID: brokerID, ClusterID: clusterID}, now); err != nil {
			return fmt.Errorf("log dir %s: %w", dir, err)
		}
	}
	return nil
}

// takeCleanShutdownMarker reports whether <dir>/.kafka_cleanshutdown exists and deletes
// it, so that a crash while loading counts as unclean next time (KAFKA-10471).
func takeCleanShutdownMarker(fsys FS, dir string) (bool, error) {
	path := filepath.Join(dir, CleanShutdownFile)
	if _, err := fsys.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return true, fmt.Errorf("remove %s: %w", path, err)
	}
	return true, nil
}

// writeCleanShutdownMarker writes <dir>/.kafka_cleanshutdown (brokerEpoch -1 in ZK mode).
func writeCleanShutdownMarker(fsys FS, dir string) error {
	if err := WriteFileAtomic(fsys, filepath.Join(dir, CleanShutdownFile), []byte(cleanShutdownContents)); err != nil {
		return fmt.Errorf("write clean shutdown marker: %w", err)
	}
	return nil
}
