// Package bill is the monthly AWS bill of evalsched itself, from the
// requests its code makes: Measure runs the real scheduler pass, intake,
// task events, results and reconciler against DynamoDB Local and the ECS and
// CloudWatch fakes (internal/httpfake) at a load scaled down where it must
// be, Meter counts DynamoDB's consumed capacity on every request, EMFCounter
// the distinct metrics the EMF documents publish; Compute multiplies the
// counts back up to a month of the load at the list prices (prices.go), one
// line of arithmetic per item. evalsched cost is its command (MeasureLocal
// starts the DynamoDB Local it measures against; WriteDoc splices the bill
// into a document); docs/cost.md shows its output at the seed's load.
package bill
