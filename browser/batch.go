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
	TimeoutMs *int   `json:"timeoutMs,omitempty" range:"1,30000"`
}

// BatchRequest is the request of browser.batch.
type BatchRequest struct {
	RequestID     string      `json:"requestId" len:"1,128"`
	LeaseID       string      `json:"leaseId" len:"1,256"`
	DocumentEpoch string      `json:"documentEpoch" len:"1,512"`
	Steps         []BatchStep `json:"steps" items:"1,8"`
	TimeoutMs     *int        `json:"timeoutMs,omitempty" range:"1,30000"`
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

// BatchParams is the params of browser.batch.
type BatchParams struct {
	SessionID  string       `json:"sessionId" len:"1,256"`
	Request    BatchRequest `json:"request"`
	ApprovalID string       `json:"approvalId" len:"1,128"`
}
