package ecstasks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/evalsched/evalsched/internal/reconcile"
	"github.com/evalsched/evalsched/internal/taskevent"
	"github.com/evalsched/evalsched/sandboxkit/sandboxenv"
)

// ECS is the part of the ECS client the reconciler calls.
type ECS interface {
	DescribeTasks(ctx context.Context, in *ecs.DescribeTasksInput, opts ...func(*ecs.Options)) (*ecs.DescribeTasksOutput, error)
	ListTasks(ctx context.Context, in *ecs.ListTasksInput, opts ...func(*ecs.Options)) (*ecs.ListTasksOutput, error)
	StopTask(ctx context.Context, in *ecs.StopTaskInput, opts ...func(*ecs.Options)) (*ecs.StopTaskOutput, error)
}

// describeBatch is DescribeTasks' limit of tasks per call.
const describeBatch = 100

// Tasks is reconcile.Tasks on the ECS API, in one cluster.
type Tasks struct {
	ECS     ECS
	Cluster string
}

// Started lists the job's tasks by startedBy (every attempt's), running
// then stopped, and describes the first describeBatch of them.
func (a Tasks) Started(ctx context.Context, jobID string) ([]reconcile.Task, error) {
	var arns []string
	for _, status := range []types.DesiredStatus{types.DesiredStatusRunning, types.DesiredStatusStopped} {
		out, err := a.ECS.ListTasks(ctx, &ecs.ListTasksInput{Cluster: aws.String(a.Cluster), StartedBy: aws.String(jobID), DesiredStatus: status})
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		arns = append(arns, out.TaskArns...)
	}
	if len(arns) == 0 {
		return nil, nil
	}
	out, err := a.ECS.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(a.Cluster), Tasks: arns[:min(len(arns), describeBatch)]})
	if err != nil {
		return nil, fmt.Errorf("describe tasks: %w", err)
	}
	tasks := make([]reconcile.Task, len(out.Tasks))
	for i, t := range out.Tasks {
		tasks[i] = TaskOf(t)
	}
	return tasks, nil
}

// Describe describes the tasks (at most describeBatch) in one call; those
// ECS no longer knows are left out.
func (a Tasks) Describe(ctx context.Context, arns []string) (map[string]reconcile.Task, error) {
	out, err := a.ECS.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(a.Cluster), Tasks: arns})
	if err != nil {
		return nil, err
	}
	tasks := make(map[string]reconcile.Task, len(out.Tasks))
	for _, t := range out.Tasks {
		tasks[aws.ToString(t.TaskArn)] = TaskOf(t)
	}
	return tasks, nil
}

// Stop stops a task with the reason.
func (a Tasks) Stop(ctx context.Context, arn, reason string) error {
	_, err := a.ECS.StopTask(ctx, &ecs.StopTaskInput{Cluster: aws.String(a.Cluster), Task: aws.String(arn), Reason: aws.String(reason)})
	return err
}

// TaskOf is a described task as the judge reads it.
func TaskOf(t types.Task) reconcile.Task {
	out := reconcile.Task{
		ARN: aws.ToString(t.TaskArn), Status: aws.ToString(t.LastStatus),
		StopCode: string(t.StopCode), StoppedReason: aws.ToString(t.StoppedReason),
		StartedAt: aws.ToTime(t.StartedAt), StoppedAt: aws.ToTime(t.StoppedAt),
	}
	out.Attempt, out.HasAttempt = attemptOf(t)
	out.Containers = make([]taskevent.Container, len(t.Containers))
	for i, c := range t.Containers {
		out.Containers[i] = taskevent.Container{Name: aws.ToString(c.Name), Reason: aws.ToString(c.Reason)}
		if c.ExitCode != nil {
			code := int(*c.ExitCode)
			out.Containers[i].ExitCode = &code
		}
	}
	return out
}

// attemptOf reads EVALSCHED_ATTEMPT from a task's container overrides.
func attemptOf(t types.Task) (string, bool) {
	if t.Overrides == nil {
		return "", false
	}
	for _, c := range t.Overrides.ContainerOverrides {
		for _, kv := range c.Environment {
			if aws.ToString(kv.Name) == sandboxenv.Attempt {
				return aws.ToString(kv.Value), true
			}
		}
	}
	return "", false
}
