// Package ecstasks is the reconciler's ECS adapter: it turns ListTasks and
// DescribeTasks answers into reconcile.Task values for the judge
// (internal/reconcile), and stops a task for it. It decides nothing; its
// tests run the reconciler against httpfake's ECS at the HTTP level, so the
// SDK's client serializes for real.
package ecstasks
