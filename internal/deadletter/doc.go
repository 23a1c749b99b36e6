// Package deadletter reads the intake's dead-letter queue for the operator
// (`evalsched dlq`): each message with when it was dead-lettered, the batch
// its body names, the intake's reason (intake.AttrReason: which field broke
// which rule) and the submitter's attributes; and deletes, redrives or
// gives back what it read.
//
//	intake λ ──reject with reason──▶ DLQ ──Queue.Receive──▶ []Letter ──Write──▶ operator
//	                                  ▲                        │
//	                                  └── Release / Delete ────┴── Send (redrive) ──▶ intake queue
//
// Receive hides each message for the time the list is read and Release
// makes it visible again, so listing deletes nothing.
package deadletter
