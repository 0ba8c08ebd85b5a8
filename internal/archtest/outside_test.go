package archtest

import (
	"bytes"
	"strings"
	"testing"
)

// forbidden are the names of documents that live outside the repository: design notes and
// reference material a reader who clones the repository does not have. They are spelled in
// pieces so that this file does not name them itself.
var forbidden = []string{
	"../" + "shared",
	"DESIGN" + ".md",
	"STYLE" + ".md",
	"reference" + "/",
	// This machine's checkouts and mirrors, which a reader does not have either.
	"/work/" + ".mirror",
	"/work/" + ".library",
	"/work/" + "main/",
}

// TestNoOutsideReferences keeps the repository standing alone: whatever a comment relied on
// is said in the comment or written under docs/.
func TestNoOutsideReferences(t *testing.T) {
	r := loadRepo(t)
	checked := 0
	for _, f := range r.files {
		b := r.read(t, f)
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			continue // binary (a screenshot, a test fixture)
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			// A web address is not a document of ours (a vendor's docs may have such folders).
			bare := urlRe.ReplaceAllString(line, " ")
			for _, w := range forbidden {
				if strings.Contains(bare, w) {
					t.Errorf("%s:%d refers to %q, outside the repository: say it here or write it under docs/\n\t%s",
						f, i+1, w, strings.TrimSpace(line))
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d text files read: is the repository listing broken?", checked)
	}
}
