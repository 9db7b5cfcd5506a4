module github.com/boltmesh/boltmesh

go 1.26.0

require (
	github.com/valyala/bytebufferpool v1.0.0
	golang.org/x/sys v0.50.0
)

require go.uber.org/goleak v1.3.0 // indirect
