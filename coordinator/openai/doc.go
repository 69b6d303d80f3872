// Package openai adapts any OpenAI-compatible Chat Completions server (OpenAI, vLLM, Ollama,
// llama.cpp) to coordinator.Model. Import it as openaimodel.
//
// Whether a model may be used at all is the policy's decision, checked by the caller before New;
// NewApproved does that check itself and refuses before any client exists.
//
// It sits beside the coordinator, implementing its Model interface; internal/cli and web choose
// it for a real model.
//
// Key types: Model (New, NewApproved), Price (what a model's tokens cost), Error (a server error
// with its status) and UnapprovedError.
package openai
