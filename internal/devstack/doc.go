// Package devstack is `evalsched local`, the whole system on one machine for
// a developer.
//
// It runs the three functions' code in one process against DynamoDB Local and
// fauxqs, with a small simulated world — a gateway and providers per model,
// and Fargate starting sandboxes that call them — standing in for the LLM
// gateway and ECS. The gateway's depth reaches the pass as on AWS
// (metrics.go): the world serves /metrics in vLLM's format, the bridge's code
// publishes it to httpfake's CloudWatch, and gatewaydepth reads it back. A developer submits a batch to the local queue with `evalsched
// submit` and watches `evalsched status` move.
//
// What runs is the real code: the intake handler polls the local queue, the
// scheduler runner makes its passes under the lease with the DynamoDB store,
// and the task-events handler receives ECS-shaped task state changes from the
// world. Only the world is simulated, in wall-clock time compressed by Speed.
// The pass yields as on AWS: its yield step's ecslauncher.Stopper calls
// StopTask with the SDK's ECS client on the world's loopback ECS endpoint
// (ecs.go, also what `evalsched cancel --stop-running` reaches), and a task
// still starting sends one STOPPED event with the yield reason, never RUNNING.
//
// What an operator sees (console.go): every log line goes as JSON to a file
// Run names (the pass log, as on AWS), and the lines that need a person —
// intake rejects with their reasons, conflicts, stored batches, the pass's
// warnings about malformed pins and models as they appear and clear,
// warnings and errors — are printed too; Verbose prints every line.
package devstack
