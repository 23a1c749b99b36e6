#!/bin/sh
# LocalStack runs this once it is ready (/etc/localstack/init/ready.d). It
# creates what template.yaml creates, under the same names as a stack named
# "evalsched" (EVALSCHED_TABLE_PREFIX, default "evalsched-"), and is safe to
# run again. awslocal is the AWS CLI pointed at LocalStack.
set -eu

prefix="${EVALSCHED_TABLE_PREFIX:-evalsched-}"
region="${AWS_DEFAULT_REGION:-us-east-1}"
account=000000000000 # LocalStack's default account
tables=/opt/evalsched/tables

# The dead-letter queue first: the intake queue's redrive policy names it.
# Retention, size, visibility and maxReceiveCount as in template.yaml.
dlq_url=$(awslocal sqs create-queue --queue-name "${prefix}intake-dlq" \
  --attributes MessageRetentionPeriod=1209600,MaximumMessageSize=1048576 \
  --query QueueUrl --output text)
dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" \
  --attribute-names QueueArn --query Attributes.QueueArn --output text)
cat > /tmp/evalsched-intake.json <<JSON
{
  "VisibilityTimeout": "1800",
  "MessageRetentionPeriod": "345600",
  "MaximumMessageSize": "1048576",
  "RedrivePolicy": "{\"deadLetterTargetArn\":\"$dlq_arn\",\"maxReceiveCount\":\"5\"}"
}
JSON
queue_url=$(awslocal sqs create-queue --queue-name "${prefix}intake" \
  --attributes file:///tmp/evalsched-intake.json --query QueueUrl --output text)

# The tables, from dynamostore's definitions (tables/*.json name them with
# the prefix "evalsched-").
for def in "$tables"/*.json; do
  name="${prefix}$(basename "$def" .json)"
  if awslocal dynamodb describe-table --table-name "$name" >/dev/null 2>&1; then
    continue
  fi
  sed "s/\"evalsched-/\"${prefix}/" "$def" > /tmp/evalsched-table.json
  awslocal dynamodb create-table --cli-input-json file:///tmp/evalsched-table.json >/dev/null
  awslocal dynamodb wait table-exists --table-name "$name"
  awslocal dynamodb update-continuous-backups --table-name "$name" \
    --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null 2>&1 || true
done

# ECS task state changes of the sandbox cluster. In AWS the rule invokes the
# task-events function; here it feeds a queue you can read, since the
# cluster (ECS) does not run in LocalStack's free tier.
events_url=$(awslocal sqs create-queue --queue-name "${prefix}task-events" --query QueueUrl --output text)
events_arn=$(awslocal sqs get-queue-attributes --queue-url "$events_url" \
  --attribute-names QueueArn --query Attributes.QueueArn --output text)
cat > /tmp/evalsched-pattern.json <<JSON
{
  "source": ["aws.ecs"],
  "detail-type": ["ECS Task State Change"],
  "detail": {"clusterArn": ["arn:aws:ecs:${region}:${account}:cluster/${prefix}sandbox"]}
}
JSON
awslocal events put-rule --name "${prefix}sandbox-task-state" \
  --event-pattern file:///tmp/evalsched-pattern.json >/dev/null
awslocal events put-targets --rule "${prefix}sandbox-task-state" \
  --targets "Id=task-events,Arn=${events_arn}" >/dev/null

echo "evalsched: intake queue ${queue_url}"
echo "evalsched: dead-letter queue ${dlq_url}"
echo "evalsched: tables ${prefix}state ${prefix}models ${prefix}pins"
echo "evalsched: task state changes of cluster ${prefix}sandbox go to ${events_url}"
