/*
 * rawfloor: the least a master can do per cycle on a raw socket, as a
 * reference for what the kernel costs: wait for an absolute deadline
 * (clock_nanosleep), send one EtherCAT frame (an LRW over the image and a
 * BRD of the AL status) with sendto on an AF_PACKET socket, read the answer
 * with a blocking recv, and nothing else: no process data, no statistics,
 * no runtime. scripts/cycle-cpu --floor runs it against the same simulated
 * segment on the same veth as ecagent, and reports its CPU time per cycle
 * (schedstat) and context switches per cycle beside the cycle process's.
 *
 *   cc -O2 -o rawfloor scripts/rawfloor.c
 *   rawfloor IFACE [PERIOD_US] [SECONDS] [IMAGE_BYTES] [PRIORITY]
 *
 * Prints one line of key=value pairs: cycles, answered, lost, cpu_us (per
 * cycle, all threads: there is one), ctxsw (per cycle). Exit 1 on a setup
 * error, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETH_P_ECAT 0x88A4

static long long schedstat_ns(void)
{
	long long run = 0;
	FILE *f = fopen("/proc/self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%lld", &run) != 1)
			run = 0;
		fclose(f);
	}
	return run;
}

/* datagram appends one datagram header, len bytes of zero data and the
 * working counter at p; more says another follows. */
static size_t datagram(uint8_t *p, uint8_t cmd, uint8_t idx, uint32_t addr, uint16_t len, int more)
{
	p[0] = cmd;
	p[1] = idx;
	memcpy(p + 2, &addr, 4); /* little-endian host */
	uint16_t l = len | (more ? 0x8000 : 0);
	memcpy(p + 6, &l, 2);
	memset(p + 8, 0, 2 + len + 2);
	return 10 + len + 2;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 6) {
		fprintf(stderr, "usage: rawfloor IFACE [PERIOD_US] [SECONDS] [IMAGE_BYTES] [PRIORITY]\n");
		return 2;
	}
	long period = argc > 2 ? atol(argv[2]) * 1000 : 1000000;
	long secs = argc > 3 ? atol(argv[3]) : 60;
	int image = argc > 4 ? atoi(argv[4]) : 32;
	int prio = argc > 5 ? atoi(argv[5]) : 80;
	if (period <= 0 || secs <= 0 || image < 1 || image > 1400 || prio < 0 || prio > 99) {
		fprintf(stderr, "rawfloor: bad argument\n");
		return 2;
	}
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ECAT));
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ECAT),
				  .sll_ifindex = (int)if_nametoindex(argv[1])};
	if (sll.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
		perror(argv[1]);
		return 1;
	}
	int one = 1;
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
	struct timeval tv = {.tv_sec = 0, .tv_usec = period / 1000 / 2};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		perror("mlockall");
	struct sched_param sp = {.sched_priority = prio};
	if (prio > 0 && sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		perror("sched_setscheduler");

	uint8_t frame[1514], buf[1514];
	memset(frame, 0xff, 6);
	memcpy(frame + 6, "\x02\x00\x00\x00\x00\x01", 6);
	frame[12] = ETH_P_ECAT >> 8;
	frame[13] = ETH_P_ECAT & 0xff;
	size_t n = 16;
	n += datagram(frame + n, 12 /* LRW */, 0, 0, (uint16_t)image, 1);
	n += datagram(frame + n, 7 /* BRD */, 0, 0x01300000, 2, 0);
	uint16_t hdr = (uint16_t)((n - 16) | 0x1000);
	memcpy(frame + 14, &hdr, 2);
	if (n < 60)
		n = 60;

	long cycles = secs * 1000000000L / period, answered = 0;
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	long long cpu0 = schedstat_ns();
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long c = 0; c < cycles; c++) {
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		frame[17] = (uint8_t)c; /* the LRW's index */
		if (sendto(fd, frame, n, 0, NULL, 0) < 0)
			continue;
		for (;;) {
			ssize_t got = recv(fd, buf, sizeof buf, 0);
			if (got < 0)
				break; /* timeout: lost */
			if (got >= 18 && (buf[6] & 0x02) && buf[17] == (uint8_t)c) {
				answered++;
				break;
			}
		}
	}
	long long cpu = schedstat_ns() - cpu0;
	getrusage(RUSAGE_SELF, &r1);
	long sw = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
	printf("cycles=%ld answered=%ld lost=%ld cpu_us=%.1f ctxsw=%.2f\n", cycles, answered, cycles - answered,
	       (double)cpu / 1000.0 / (double)cycles, (double)sw / (double)cycles);
	return 0;
}
