package grpcbench

import (
	"context"
	"net"
	"testing"

	"github.com/boltmesh/boltmesh/rpc/internal/rpcbench"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// rawCodec moves []byte messages as they are: no code generation, no
// protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }

// Unmarshal copies: gRPC may reuse data once it returns.
func (rawCodec) Unmarshal(data []byte, v any) error {
	p := v.(*[]byte)
	*p = append((*p)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "raw" }

const method = "/boltmesh.bench.Echo/Echo"

// echoDesc is the service, written by hand instead of generated.
var echoDesc = grpc.ServiceDesc{
	ServiceName: "boltmesh.bench.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			return &in, nil
		},
	}},
}

// newServer is the echo server.
func newServer() *grpc.Server {
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	srv.RegisterService(&echoDesc, struct{}{})
	return srv
}

// dial connects to the echo server at addr and returns the call function
// and the close.
func dial(b *testing.B, addr string) (rpcbench.CallFunc, func()) {
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	call := func(args []byte) ([]byte, error) {
		var reply []byte
		err := cc.Invoke(ctx, method, &args, &reply)
		return reply, err
	}
	return call, func() { cc.Close() }
}

// GRPC is a gRPC-go unary echo over one loopback connection (HTTP/2, which
// multiplexes the concurrent callers), client and server in this process.
func GRPC(b *testing.B) (rpcbench.CallFunc, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := newServer()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	call, closeClient := dial(b, ln.Addr().String())
	return call, func() {
		closeClient()
		srv.Stop()
		<-served
	}
}

// RemoteGRPC is GRPC with the server in a child process (see
// rpcbench.StartServer): this test binary, whose TestMain runs serveGRPC.
func RemoteGRPC(b *testing.B) (rpcbench.CallFunc, func()) {
	child := rpcbench.StartServer(b, "grpc", nil)
	call, closeClient := dial(b, child.Ready(b))
	return call, func() {
		closeClient()
		child.Stop()
	}
}

// serveGRPC is RemoteGRPC's server, run by a child process.
func serveGRPC(ready func(string), stop <-chan struct{}) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := newServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ready(ln.Addr().String())
	select {
	case <-stop:
		srv.Stop()
		return nil
	case err := <-served:
		return err
	}
}
