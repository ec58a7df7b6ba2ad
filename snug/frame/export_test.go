package frame

// This file opens what only tests need.

// CheckOpenURL is the §4 URL rule, which the conformance tests name as one
// of the prose refinements of the open-url-request schema.
var CheckOpenURL = checkOpenURL
