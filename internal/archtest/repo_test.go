package archtest

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// repo is the repository as the checks see it: its root and the files a checkout holds
// (tracked and new files, not what .gitignore leaves out: binaries, .cluster/, bin/).
type repo struct {
	root   string
	files  []string // slash-separated, relative to root, sorted
	isFile map[string]bool
	isDir  map[string]bool     // every directory holding a listed file ("" is the root)
	byBase map[string][]string // base name -> files
	top    map[string]bool     // top-level directories
}

var (
	repoOnce sync.Once
	repoVal  *repo
	repoErr  error
)

func loadRepo(t *testing.T) *repo {
	t.Helper()
	repoOnce.Do(func() { repoVal, repoErr = scanRepo() })
	if repoErr != nil {
		t.Fatal(repoErr)
	}
	return repoVal
}

func scanRepo() (*repo, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return nil, fs.ErrNotExist
		}
		root = parent
	}
	files, err := gitFiles(root)
	if err != nil {
		files, err = walkFiles(root)
		if err != nil {
			return nil, err
		}
	}
	r := &repo{root: root, isFile: map[string]bool{}, isDir: map[string]bool{"": true},
		byBase: map[string][]string{}, top: map[string]bool{}}
	for _, f := range files {
		// git lists files deleted from the work tree until the deletion is committed.
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err != nil {
			continue
		}
		r.files = append(r.files, f)
		r.isFile[f] = true
		r.byBase[path.Base(f)] = append(r.byBase[path.Base(f)], f)
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.isDir[d] = true
			if !strings.Contains(d, "/") {
				r.top[d] = true
			}
		}
	}
	sort.Strings(r.files)
	return r, nil
}

// gitFiles lists tracked files and new files .gitignore does not exclude.
func gitFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 && !seen[string(f)] {
			seen[string(f)] = true
			files = append(files, string(f))
		}
	}
	return files, nil
}

// walkFiles is the fallback without git (a source tarball): skip hidden directories and the
// build and cluster directories .gitignore names.
func walkFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bin" || rel == "data" || rel == "fuzz-cache") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || rel == "samsa" || strings.HasSuffix(rel, ".log.txt") ||
			strings.HasSuffix(rel, ".test") || strings.HasSuffix(rel, ".out") || strings.HasSuffix(rel, ".prof") {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

func (r *repo) read(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(f)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(r *repo, f string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.root, filepath.FromSlash(f)))
}
