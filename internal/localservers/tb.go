package localservers

// T is what the test helpers (DynamoDB, SQS, Lambda) use of a test;
// testing.TB satisfies it. It is declared here rather than taken as
// testing.TB so that this package, which `evalsched local` links, does not
// import testing and the operator CLI does not carry the test framework
// (cmd/evalsched/deps_test.go checks it).
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}
