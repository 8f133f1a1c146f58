/* A network link with a one-way delay, for the testbed (testbed.sh) on kernels without
 * netem: two TAP devices joined by this process. A frame the stack sends out of the
 * node's device comes in at the port's device DELAY later, in order; a frame the port
 * sends reaches the node at once. As with netem on each node's egress, a frame between
 * two nodes is delayed once, by its sender's link.
 *
 *   delay_link DELAY NODE_DEVICE PORT_DEVICE      (DELAY in tc's units: 500us, 5ms)
 *
 * It creates both devices, prints the pid of the process that carries the frames and
 * returns; that process runs until killed, and the devices end with it (testbed.sh
 * moves the node's device into the node's namespace). The devices take TCP's
 * segmentation offload, as a NIC does, so that a 64 KiB segment crosses in one read
 * and one write and the link keeps up with 10 Gbit/s on a loaded core. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* The virtio header TAP puts before each frame, and a whole offloaded segment. */
enum { FRAME_MAX = 12 + 65550 };
/* Frames in flight: 10 Gbit/s for 5 ms is 6.25 MB. A full queue drops, as a link's does. */
enum { QUEUE_BYTES = 64 << 20 };

struct queued {
  int64_t due_ns;
  uint32_t len;
};

/* A ring of [struct queued][frame] records, each 8-byte aligned. Unwrapped, the records
 * are [head, tail); wrapped, [head, wrap) then [0, tail): a record that would cross the
 * end starts again at 0. */
struct queue {
  unsigned char *bytes;
  size_t head, tail, wrap, used;
};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static size_t record_size(uint32_t len) { return (sizeof(struct queued) + len + 7) & ~(size_t)7; }

static struct queued *queue_front(const struct queue *q) {
  return q->used ? (struct queued *)(q->bytes + q->head) : NULL;
}

/* 0 when the frame does not fit: it is dropped. */
static int queue_push(struct queue *q, const unsigned char *frame, uint32_t len, int64_t due_ns) {
  size_t size = record_size(len), at = q->tail;
  int wrapped = q->used && q->tail <= q->head;
  if (wrapped) {
    if (at + size > q->head) return 0;
  } else if (at + size > QUEUE_BYTES) {
    if (size > q->head) return 0;
    q->wrap = at;
    at = 0;
  }
  struct queued r = {due_ns, len};
  memcpy(q->bytes + at, &r, sizeof r);
  memcpy(q->bytes + at + sizeof r, frame, len);
  q->tail = at + size;
  q->used += size;
  return 1;
}

static void queue_pop(struct queue *q) {
  size_t size = record_size(queue_front(q)->len);
  q->head += size;
  q->used -= size;
  if (!q->used) {
    q->head = q->tail = q->wrap = 0;
  } else if (q->wrap && q->head == q->wrap) {
    q->head = q->wrap = 0;
  }
}

static int open_tap(const char *name) {
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    perror("delay_link: /dev/net/tun");
    exit(1);
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  if (strlen(name) >= IFNAMSIZ) {
    fprintf(stderr, "delay_link: device name '%s' is longer than %d characters\n", name, IFNAMSIZ - 1);
    exit(2);
  }
  strcpy(ifr.ifr_name, name);
  if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) < 0) {
    fprintf(stderr, "delay_link: cannot create TAP device '%s': %s\n", name, strerror(errno));
    exit(1);
  }
  return fd;
}

static int64_t parse_delay_ns(const char *text) {
  char *end;
  double value = strtod(text, &end);
  double unit = !strcmp(end, "us") ? 1e3 : !strcmp(end, "ms") ? 1e6 : !strcmp(end, "s") ? 1e9 : 0;
  if (end == text || unit == 0 || !(value >= 0 && value * unit <= 10e9)) {
    fprintf(stderr, "delay_link: delay '%s' is not a time up to 10s in us, ms or s (e.g. 5ms)\n", text);
    exit(2);
  }
  return (int64_t)(value * unit);
}

/* A frame due is written late only by as much as the scheduler makes this process
 * wait: it runs first where it may (SCHED_FIFO) and sleeps to the nanosecond. */
static void ask_for_prompt_wakeups(void) {
  struct sched_param p = {.sched_priority = 1};
  sched_setscheduler(0, SCHED_FIFO, &p);
  prctl(PR_SET_TIMERSLACK, 1UL);
}

/* A device that is down refuses the frame: it is lost, as on a cable pulled out. */
static void send_or_drop(int fd, const void *frame, size_t len) {
  ssize_t sent = write(fd, frame, len);
  (void)sent;
}

static void carry(int node, int port, int64_t delay_ns) {
  static unsigned char frame[FRAME_MAX];
  struct queue q = {.bytes = malloc(QUEUE_BYTES)};
  if (!q.bytes) exit(1);
  for (;;) {
    int64_t now = now_ns();
    for (struct queued *r; (r = queue_front(&q)) && r->due_ns <= now; queue_pop(&q)) send_or_drop(port, r + 1, r->len);
    struct queued *next = queue_front(&q);
    int64_t wait = next ? next->due_ns - now : 0;
    struct timespec timeout = {wait / 1000000000, wait % 1000000000};
    struct pollfd fds[2] = {{.fd = node, .events = POLLIN}, {.fd = port, .events = POLLIN}};
    if (ppoll(fds, 2, next ? &timeout : NULL, NULL) < 0 && errno != EINTR) exit(1);
    ssize_t n;
    while ((n = read(node, frame, sizeof frame)) > 0) queue_push(&q, frame, (uint32_t)n, now_ns() + delay_ns);
    while ((n = read(port, frame, sizeof frame)) > 0) send_or_drop(node, frame, (size_t)n);
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: delay_link DELAY NODE_DEVICE PORT_DEVICE\n");
    return 2;
  }
  int64_t delay_ns = parse_delay_ns(argv[1]);
  int node = open_tap(argv[2]), port = open_tap(argv[3]);
  pid_t pid = fork();
  if (pid < 0) {
    perror("delay_link: fork");
    return 1;
  }
  if (pid > 0) {
    printf("%d\n", (int)pid);
    return 0;
  }
  /* Detached, so that whoever waits for the parent's output is not kept waiting. */
  int null = open("/dev/null", O_RDWR);
  dup2(null, 0);
  dup2(null, 1);
  dup2(null, 2);
  setsid();
  ask_for_prompt_wakeups();
  carry(node, port, delay_ns);
}
