package iamcheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// requests returns the IAM requests AWS authorizes one SDK call as. A call
// it does not know is an error: a new call gets its rule here before any
// test can pass with it.
func (c *Checker) requests(input any) ([]Request, error) {
	switch in := input.(type) {
	// ---- DynamoDB: the table, or the index a Query or Scan reads.
	case *dynamodb.GetItemInput:
		return leading(c.table("GetItem", in.TableName), in.Key), nil
	case *dynamodb.PutItemInput:
		return leading(c.table("PutItem", in.TableName), in.Item), nil
	case *dynamodb.UpdateItemInput:
		return leading(c.table("UpdateItem", in.TableName), in.Key), nil
	case *dynamodb.DeleteItemInput:
		return leading(c.table("DeleteItem", in.TableName), in.Key), nil
	case *dynamodb.QueryInput:
		return c.index("Query", in.TableName, in.IndexName), nil
	case *dynamodb.ScanInput:
		return c.index("Scan", in.TableName, in.IndexName), nil
	case *dynamodb.DescribeTableInput:
		return c.table("DescribeTable", in.TableName), nil
	case *dynamodb.CreateTableInput:
		return c.table("CreateTable", in.TableName), nil
	case *dynamodb.UpdateTimeToLiveInput:
		return c.table("UpdateTimeToLive", in.TableName), nil
	case *dynamodb.DescribeTimeToLiveInput:
		return c.table("DescribeTimeToLive", in.TableName), nil
	case *dynamodb.BatchGetItemInput:
		// Authorized table by table, as its own action.
		var out []Request
		for _, t := range sortedTables(in.RequestItems) {
			out = append(out, c.table("BatchGetItem", &t)...)
		}
		return out, nil
	case *dynamodb.BatchWriteItemInput:
		var out []Request
		for _, t := range sortedTables(in.RequestItems) {
			out = append(out, c.table("BatchWriteItem", &t)...)
		}
		return out, nil
	case *dynamodb.TransactWriteItemsInput:
		// No action of its own: each item is authorized as the
		// single-item action on its table ("Using IAM with DynamoDB
		// transactions").
		var out []Request
		for i, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, c.table("PutItem", it.Put.TableName)...)
			case it.Update != nil:
				out = append(out, c.table("UpdateItem", it.Update.TableName)...)
			case it.Delete != nil:
				out = append(out, c.table("DeleteItem", it.Delete.TableName)...)
			case it.ConditionCheck != nil:
				out = append(out, c.table("ConditionCheckItem", it.ConditionCheck.TableName)...)
			default:
				return nil, fmt.Errorf("TransactWriteItems item %d has no operation", i)
			}
		}
		return out, nil
	case *dynamodb.TransactGetItemsInput:
		var out []Request
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, c.table("GetItem", it.Get.TableName)...)
			}
		}
		return out, nil

	// ---- ECS: the task definition or the tasks, in a cluster.
	case *ecs.RunTaskInput:
		return c.runTask(in)
	case *ecs.StopTaskInput:
		return []Request{c.task("StopTask", in.Cluster, aws.ToString(in.Task))}, nil
	case *ecs.DescribeTasksInput:
		var out []Request
		for _, t := range in.Tasks {
			out = append(out, c.task("DescribeTasks", in.Cluster, t))
		}
		return out, nil
	case *ecs.ListTasksInput:
		// Its only resource type is container-instance; listing a
		// cluster's tasks is authorized on "*" with ecs:cluster.
		return []Request{{Action: "ecs:ListTasks", Resource: "*", Context: c.onCluster(in.Cluster)}}, nil
	case *ecs.DescribeClustersInput:
		var out []Request
		for _, cl := range in.Clusters {
			out = append(out, Request{Action: "ecs:DescribeClusters", Resource: c.clusterARN(&cl)})
		}
		return out, nil
	case *ecs.DescribeTaskDefinitionInput:
		return []Request{{Action: "ecs:DescribeTaskDefinition", Resource: "*"}}, nil // no resource type

	// ---- CloudWatch: metrics have no resource type.
	case *cloudwatch.GetMetricDataInput:
		return []Request{{Action: "cloudwatch:GetMetricData", Resource: "*"}}, nil
	case *cloudwatch.PutMetricDataInput:
		return []Request{{Action: "cloudwatch:PutMetricData", Resource: "*",
			Context: map[string][]string{"cloudwatch:namespace": {aws.ToString(in.Namespace)}}}}, nil

	// ---- SQS: the queue its URL names.
	case *sqs.SendMessageInput:
		return c.queue("SendMessage", in.QueueUrl), nil
	case *sqs.SendMessageBatchInput:
		return c.queue("SendMessage", in.QueueUrl), nil
	case *sqs.ReceiveMessageInput:
		return c.queue("ReceiveMessage", in.QueueUrl), nil
	case *sqs.DeleteMessageInput:
		return c.queue("DeleteMessage", in.QueueUrl), nil
	case *sqs.DeleteMessageBatchInput:
		return c.queue("DeleteMessage", in.QueueUrl), nil
	case *sqs.ChangeMessageVisibilityInput:
		return c.queue("ChangeMessageVisibility", in.QueueUrl), nil
	case *sqs.ChangeMessageVisibilityBatchInput:
		return c.queue("ChangeMessageVisibility", in.QueueUrl), nil
	case *sqs.GetQueueAttributesInput:
		return c.queue("GetQueueAttributes", in.QueueUrl), nil
	case *sqs.PurgeQueueInput:
		return c.queue("PurgeQueue", in.QueueUrl), nil
	case *sqs.GetQueueUrlInput:
		return []Request{{Action: "sqs:GetQueueUrl", Resource: c.arn("sqs", aws.ToString(in.QueueName))}}, nil
	case *sqs.CreateQueueInput:
		return []Request{{Action: "sqs:CreateQueue", Resource: c.arn("sqs", aws.ToString(in.QueueName))}}, nil
	}
	return nil, fmt.Errorf("iamcheck has no IAM rule for %T: add it to Checker.requests", input)
}

// arn is a regional ARN of this account: arn:aws:<service>:<region>:<account>:<rest>.
func (c *Checker) arn(service, rest string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", c.Partition, service, c.Region, c.Account, rest)
}

func (c *Checker) tableARN(name *string) string {
	n := aws.ToString(name)
	if strings.HasPrefix(n, "arn:") {
		return n
	}
	return c.arn("dynamodb", "table/"+n)
}

func (c *Checker) table(action string, name *string) []Request {
	return []Request{{Action: "dynamodb:" + action, Resource: c.tableARN(name)}}
}

// leading adds dynamodb:LeadingKeys, the item's partition key value, to a
// single-item request on the state table, whose partition key is "pk"
// (the models and pins tables' keys add nothing: no policy conditions on
// them).
func leading(reqs []Request, item map[string]types.AttributeValue) []Request {
	if pk, ok := item["pk"].(*types.AttributeValueMemberS); ok {
		for i := range reqs {
			reqs[i].Context = map[string][]string{"dynamodb:leadingkeys": {pk.Value}}
		}
	}
	return reqs
}

func (c *Checker) index(action string, table, index *string) []Request {
	res := c.tableARN(table)
	if index != nil {
		res += "/index/" + *index
	}
	return []Request{{Action: "dynamodb:" + action, Resource: res}}
}

func sortedTables[V any](m map[string]V) []string {
	var out []string
	for t := range m {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// queue names a queue by its URL's last segment in this account: local
// stand-ins (fauxqs) put their own account in the URL.
func (c *Checker) queue(action string, url *string) []Request {
	u := aws.ToString(url)
	return []Request{{Action: "sqs:" + action, Resource: c.arn("sqs", u[strings.LastIndex(u, "/")+1:])}}
}

// clusterARN is the ARN of a cluster given by name or ARN ("default" when
// absent, as ECS takes it).
func (c *Checker) clusterARN(cluster *string) string {
	n := aws.ToString(cluster)
	if n == "" {
		n = "default"
	}
	if strings.HasPrefix(n, "arn:") {
		return n
	}
	return c.arn("ecs", "cluster/"+n)
}

func (c *Checker) onCluster(cluster *string) map[string][]string {
	return map[string][]string{"ecs:cluster": {c.clusterARN(cluster)}}
}

// task is a request on one task, by its id in the cluster: the local
// fake's task ARNs carry their own account.
func (c *Checker) task(action string, cluster *string, task string) Request {
	arn := c.clusterARN(cluster)
	name := arn[strings.LastIndex(arn, "/")+1:]
	id := task[strings.LastIndex(task, "/")+1:]
	return Request{Action: "ecs:" + action, Resource: c.arn("ecs", "task/"+name+"/"+id), Context: c.onCluster(cluster)}
}

// runTask is ecs:RunTask on the task definition's revision in the
// cluster, and iam:PassRole for each role the task gets: the task
// definition's (from the template) and any the overrides name.
func (c *Checker) runTask(in *ecs.RunTaskInput) ([]Request, error) {
	td := aws.ToString(in.TaskDefinition)
	family := td
	if i := strings.Index(family, ":task-definition/"); strings.HasPrefix(family, "arn:") && i >= 0 {
		family = family[i+len(":task-definition/"):]
	}
	family, rev, hasRev := strings.Cut(family, ":")
	if !hasRev {
		rev = "1" // ECS runs the latest ACTIVE revision; IAM sees its ARN
	}
	out := []Request{{Action: "ecs:RunTask", Resource: c.arn("ecs", "task-definition/"+family+":"+rev), Context: c.onCluster(in.Cluster)}}
	var roles []string
	if c.TaskRoles != nil {
		r, err := c.TaskRoles(family)
		if err != nil {
			return nil, fmt.Errorf("RunTask of %s: %w", td, err)
		}
		roles = append(roles, r...)
	}
	if o := in.Overrides; o != nil {
		for _, r := range []*string{o.TaskRoleArn, o.ExecutionRoleArn} {
			if r != nil {
				roles = append(roles, *r)
			}
		}
	}
	for _, r := range roles {
		out = append(out, Request{Action: "iam:PassRole", Resource: r,
			Context: map[string][]string{"iam:passedtoservice": {"ecs-tasks.amazonaws.com"}}})
	}
	return out, nil
}
