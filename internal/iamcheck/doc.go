// Package iamcheck enforces IAM in the tests: an SDK middleware that
// refuses every call the caller's policy does not grant, as AWS would, with
// the policies read from template.yaml itself.
//
// DynamoDB Local, fauxqs and the HTTP-level fakes (internal/httpfake) do not
// check IAM, so a role that lacks an action the code needs passes every
// local test and fails on AWS, where the call returns AccessDeniedException.
// Here each call is turned into the IAM requests AWS authorizes it as
// (calls.go: each item of a DynamoDB transaction, each table of a batch
// call, an index for a Query on one, iam:PassRole for the roles a RunTask
// hands ECS) and evaluated against the role's statements (policy.go); a
// refusal is an AccessDeniedException the code sees before anything is sent.
//
// The policies come from the template (template.go): the role a function
// runs as, its inline policies and the policies attached to it, SAM policy
// templates expanded, intrinsics (!Ref, !GetAtt, !Sub, !Join, !If, …)
// resolved against the stack's logical ids to concrete names and ARNs in a
// fake account, region and stack name. The same Stack gives each
// function's environment as the template sets it, so a test runs the
// function against the very table and queue names the role grants.
//
// Where it sits: beside the functions, for tests only. No Lambda binary
// imports it (functions/*/deps_test.go and cmd/evalsched's deps test
// check): the functions' and the CLI's tests build their real clients with
// APIOptions from here.
package iamcheck
