//go:build darwin || freebsd || netbsd || openbsd

package shm

// Listen opens a Unix stream listener for neighbours on a socket "s" in a
// fresh directory from os.MkdirTemp (mode 0700, so only this uid can
// connect), in os.TempDir or, where that path would not fit sun_path's 104
// bytes, in /tmp. Close removes the directory.
func Listen() (*Listener, error) { return listenPath() }
