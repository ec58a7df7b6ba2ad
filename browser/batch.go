package browser

import "time"

// Batch limits.
const (
	MaxBatchSteps       = 8
	DefaultBatchTimeout = 30 * time.Second
	MaxBatchTimeout     = 30 * time.Second
)

// BatchStep is one explicit step of a batch.
type BatchStep struct {
	Action    Action `json:"action"`
	TimeoutMs *int   `json:"timeoutMs,omitempty"`
}

// BatchRequest is the request of browser.batch.
type BatchRequest struct {
	RequestID     string      `json:"requestId"`
	LeaseID       string      `json:"leaseId"`
	DocumentEpoch string      `json:"documentEpoch"`
	Steps         []BatchStep `json:"steps"`
	TimeoutMs     *int        `json:"timeoutMs,omitempty"`
}

// StepReport says what became of one step.
type StepReport struct {
	Index  int           `json:"index"`
	Status string        `json:"status"` // notRun or attempted
	Result *ActionResult `json:"result,omitempty"`
}

// BatchResult is the value of browser.batch: the ActionResult of the plan
// as a whole, with each step's report. Recovery answers carry no steps:
// progress after a crash is unknown.
type BatchResult struct {
	ActionResult
	TotalSteps int          `json:"totalSteps"`
	Steps      []StepReport `json:"steps,omitempty"`
}

type BatchParams struct {
	SessionID  string       `json:"sessionId"`
	Request    BatchRequest `json:"request"`
	ApprovalID string       `json:"approvalId"`
}
