// Package httpfake fakes, at the HTTP level, the two AWS services that have no
// local server to run: ECS and CloudWatch.
//
// ECS speaks AWS JSON 1.1 and CloudWatch smithy RPC v2 CBOR. The real SDK
// clients talk to them over loopback, so requests and responses are serialized
// for real; only the service behind the wire is fake. Tests, benchmarks and
// the local mode use them. DynamoDB and SQS are never faked here: they run as
// DynamoDB Local and fauxqs.
package httpfake
