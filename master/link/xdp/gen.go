package xdp

// The XDP program is compiled into the binary: redirect_bpfel.go and
// redirect_bpfeb.go embed the object files bpf2go builds from
// bpf/redirect.c. To rebuild them after changing the program (needs clang;
// Debian: apt-get install clang llvm), run in this directory:
//
//	go generate
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -tags linux -target bpfel,bpfeb -no-global-types redirect bpf/redirect.c -- -O2 -Wall -Werror -g
