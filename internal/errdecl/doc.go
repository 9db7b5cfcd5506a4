// Package errdecl holds no code. Its tests check how the module declares
// its errors: every package's sentinels and error types sit in that
// package's errors.go (a file with a build constraint may keep the errors
// only the systems it builds for have), and no two packages declare
// exported error types of the same name.
package errdecl
