// Package archtest holds no code, only tests that keep the repository honest about itself:
// the import rules and the package diagram of docs/architecture.md hold (imports_test.go),
// its ZooKeeper layout matches the paths the code spells (znodes_test.go), no file points to
// documents outside the repository (outside_test.go), and every link and code reference in
// README.md and docs/ resolves to a file, directory or declaration that exists
// (docrefs_test.go; the reference convention is written at the top of
// docs/architecture.md, "How to read these docs"), and every page under docs/ can be
// reached from README.md by links (reach_test.go).
package archtest
