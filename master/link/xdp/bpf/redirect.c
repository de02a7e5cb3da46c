// The XDP program of ecagent's AF_XDP link: EtherCAT frames (EtherType
// 0x88A4) arriving on the master's interface go to the AF_XDP socket bound
// to their receive queue, with the time they arrived (CLOCK_MONOTONIC ns)
// in 8 bytes put in front of the frame; every other frame passes on to
// the kernel's stack, so that one NIC carries EtherCAT and the host's own
// traffic. Self-contained (no kernel or libbpf headers), so that the
// command in ../gen.go rebuilds it on any host with clang.

typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))

// struct xdp_md of <linux/bpf.h>, the fields read here and those before.
struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
};

enum { XDP_PASS = 2 };
enum { BPF_MAP_TYPE_XSKMAP = 17 };

// The sockets, by receive queue (a BTF-defined map, as libbpf writes it).
struct {
	int (*type)[BPF_MAP_TYPE_XSKMAP];
	int (*max_entries)[64];
	__u32 *key;
	__u32 *value;
} xsks SEC(".maps");

static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;
static long (*bpf_xdp_adjust_head)(struct xdp_md *ctx, int delta) = (void *)44;

SEC("xdp")
int ecat_redirect(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	unsigned char *data = (unsigned char *)(long)ctx->data;
	unsigned char *end = (unsigned char *)(long)ctx->data_end;

	if (data + 14 > end || data[12] != 0x88 || data[13] != 0xa4)
		return XDP_PASS;
	// The arrival time goes in 8 bytes in front of the frame, which the
	// socket strips: every frame it gets has them. XDP guarantees a
	// headroom of 256 bytes, so growing the head fails only on a broken
	// driver; the frame then goes to the stack and counts as lost.
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(__u64)) != 0)
		return XDP_PASS;
	__u64 *stamp = (__u64 *)(long)ctx->data;
	if ((unsigned char *)(stamp + 1) > (unsigned char *)(long)ctx->data_end)
		return XDP_PASS; // cannot happen; the verifier wants it checked
	*stamp = now;
	// No socket on this queue: the frame goes to the stack (XDP_PASS).
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
