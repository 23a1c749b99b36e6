// Package dynamotest builds the DynamoDB Local world the tests outside
// internal/dynamostore start from: evalsched's tables under a prefix, and
// the claimed job the Lambda functions' sample events name.
//
// Where it sits: beside the store, for tests only. localservers starts the
// server (it cannot import dynamostore: dynamostore's own tests import it);
// this package puts the store's tables and items on it, so the functions'
// and the CLI's tests do not each repeat the client, tables and claim.
package dynamotest
