// Package lambdaboot is the boot sequence the four Lambda functions share
// (functions/*): read the environment (internal/config), load the AWS
// configuration once per cold start, build the jobs' store, then hand the
// handler to the Lambda runtime with a JSON logger on standard output. A
// function that cannot start logs why and exits 1, so a broken deployment
// shows its reason in CloudWatch Logs instead of failing each invocation.
//
//	functions/<name>/main.go: build(ctx, log, opts...) ──▶ lambdaboot.Main ──▶ lambda.Start
//	                              └─ lambdaboot.Load: config + aws.Config + Store
//
// The AWS configuration comes from awsconfig.LoadDefaultConfig, which reads
// AWS_CA_BUNDLE itself (docs/local-aws.md): no HTTP client is set here, so
// the bundle is honoured. The tests pass the IAM check of internal/iamcheck
// as a load option, so the roles in template.yaml are enforced.
package lambdaboot
