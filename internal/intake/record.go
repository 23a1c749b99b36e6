package intake

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Record is what Lambda's SQS event source makes of a received message, for
// callers that poll the queue themselves (local mode, tests): the id, the
// receipt handle, the body, the system attributes and the message
// attributes (receive them with MessageAttributeNames "All", as the event
// source does).
func Record(m sqstypes.Message) events.SQSMessage {
	r := events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), EventSource: "aws:sqs",
		Attributes: map[string]string{},
	}
	for k, v := range m.Attributes {
		r.Attributes[k] = v
	}
	if len(m.MessageAttributes) > 0 {
		r.MessageAttributes = make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for name, a := range m.MessageAttributes {
			r.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	return r
}
