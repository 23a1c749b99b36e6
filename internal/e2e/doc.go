// Package e2e holds the end-to-end test of the whole system: the three
// functions built as they ship and run under the Lambda runtime interface
// emulator, with DynamoDB Local and fauxqs, and the HTTP-level ECS and
// CloudWatch fakes. A batch message enters SQS, the intake ingests it,
// scheduler invocations admit and launch its jobs, task events finish them.
package e2e
