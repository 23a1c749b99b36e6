package bill

// Price is one list price, us-east-1, on demand.
type Price struct {
	USD    float64
	Per    string // the unit the price is for
	Source string // where it is published
	Date   string // when it was read there
}

// The prices the bill multiplies by. Free tiers are left out (they are per
// account, shared with everything else in it), except SQS's first million
// requests, stated where used.
var (
	DynamoWrite     = Price{0.625, "million write request units", "https://aws.amazon.com/dynamodb/pricing/on-demand/", "2026-12-04"}
	DynamoRead      = Price{0.125, "million read request units", "https://aws.amazon.com/dynamodb/pricing/on-demand/", "2026-12-04"}
	DynamoStorage   = Price{0.25, "GB-month (after 25 GB free)", "https://aws.amazon.com/dynamodb/pricing/on-demand/", "2026-12-04"}
	DynamoPITR      = Price{0.20, "GB-month of point-in-time recovery", "https://aws.amazon.com/dynamodb/pricing/on-demand/", "2026-12-04"}
	LambdaGBs       = Price{0.0000133334, "GB-second (arm64)", "https://aws.amazon.com/lambda/pricing/", "2026-12-04"}
	LambdaRequests  = Price{0.20, "million requests", "https://aws.amazon.com/lambda/pricing/", "2026-12-04"}
	SQSRequests     = Price{0.40, "million requests of 64 KB (first 1 M a month free)", "https://aws.amazon.com/sqs/pricing/", "2026-12-04"}
	CWMetric        = Price{0.30, "custom metric-month (first 10,000; billed by the hour)", "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"}
	CWGetMetricData = Price{0.01, "thousand metrics requested (GetMetricData)", "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"}
	CWPutMetricData = Price{0.01, "thousand requests (PutMetricData)", "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"}
	CWLogsIngest    = Price{0.50, "GB ingested (standard)", "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"}
	CWAlarm         = Price{0.10, "standard-resolution alarm metric-month", "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"}
	CWDashboard     = Price{3.00, "dashboard-month (first 3 free)", "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"}
	FargateVCPU     = Price{0.03238, "vCPU-hour (Linux/ARM64)", "https://aws.amazon.com/fargate/pricing/", "2026-12-04"}
	FargateGB       = Price{0.00356, "GB-hour (Linux/ARM64)", "https://aws.amazon.com/fargate/pricing/", "2026-12-04"}
)

// Prices lists every price with its name, for the bill's table.
func Prices() []NamedPrice {
	return []NamedPrice{
		{"DynamoDB write", DynamoWrite}, {"DynamoDB read", DynamoRead}, {"DynamoDB storage", DynamoStorage},
		{"DynamoDB PITR", DynamoPITR}, {"Lambda duration", LambdaGBs}, {"Lambda requests", LambdaRequests},
		{"SQS requests", SQSRequests}, {"CloudWatch custom metrics", CWMetric}, {"CloudWatch GetMetricData", CWGetMetricData},
		{"CloudWatch PutMetricData", CWPutMetricData}, {"CloudWatch Logs ingestion", CWLogsIngest},
		{"CloudWatch alarms", CWAlarm}, {"CloudWatch dashboards", CWDashboard},
		{"Fargate vCPU", FargateVCPU}, {"Fargate memory", FargateGB},
	}
}

// NamedPrice is a price with its line's name.
type NamedPrice struct {
	Name string
	Price
}
