// Package lambdaboot is the start-up the four Lambda mains (functions/*)
// share, before any pass or message: a JSON logger on stdout, the
// functions' environment (internal/config) with the variables a function
// requires, the SDK configuration, the DynamoDB store, and the handler
// built once per cold start. A function that cannot start logs why and
// exits 1, so Lambda reports the init error with the reason.
package lambdaboot
