/*
 * relaygen: the relay benchmark's load generator for the real-sender shape (issue #10), in C so that the
 * generator is not the limit on a 2-core machine.
 *
 * One process, two threads:
 *   - the sender thread keeps S keep-alive connections (HTTP/1.1 without pipelining, or MQTT with one QoS 1
 *     PUBLISH unacknowledged at a time) and sends on an open-loop schedule: message i is due at
 *     start + i / rate, whether or not earlier messages have been answered, to a device drawn at random;
 *   - the listener thread holds one stream per device (PushRelay: GET /v1/stream, SSE over HTTP/1.1; nchan:
 *     EventSource GET /sub/ch<k>; mosquitto: MQTT 3.1.1, clean_session=0, QoS 1 subscription to ch<k>) and
 *     records the first arrival of each message. PushRelay listeners acknowledge with POST /v1/ack, batched per
 *     device once per --ack-interval, staggered over the interval, on --ack-conns keep-alive connections; MQTT
 *     listeners PUBACK every message.
 *
 * Every time is CLOCK_MONOTONIC in one process. Latency is counted from each message's *scheduled* send time, so
 * a message that waited for a free connection carries that wait (no coordinated omission); the wait itself is
 * reported as the schedule lag. Percentiles are exact (nearest rank over every message).
 *
 * Protocol with the caller (run.py), one line each way:
 *   relaygen prints "ready <listeners>" once every connection is up, then reads a line from stdin ("go");
 *   it runs, drains, flushes the last acknowledgements, prints "finished", reads a line (the caller reads the
 *   server's CPU time between "go" and "finished"), then prints one JSON object and exits 0. Any setup failure
 *   prints "error <reason>" and exits 2. Whether the run passed (no unsent, failed, unanswered or lost message)
 *   is the caller's judgement, from the counts in the JSON.
 *
 * Loopback only (the address is checked), bounded in connections and in time.
 *
 *   cc -O2 -pthread -o relaygen relaygen.c
 *   relaygen --target pushrelay --port P --devices FILE --server-key K --rate 5000 --duration 10
 *   (--listen-port Q: the streams and acknowledgements go to another node on Q, the sends to P: cross-node)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum target { PUSHRELAY, NCHAN, MQTT };

static struct {
    enum target target;
    const char *host;
    int port, listen_port;
    double rate, duration, drain, ack_interval;
    int senders, listeners, ack_conns;
    const char *devices_file, *server_key;
    uint64_t seed;
} opt = {PUSHRELAY, "127.0.0.1", 0, 0, 5000, 10, 10, 1.0, 8, 1000, 4, NULL, NULL, 1};

static char **tokens, **secrets;

/* Per message, indexed by sequence number; 0 means "not yet". Written by one thread each, read after joins. */
static int64_t start_ns, interval_ns_x1000; /* interval in ns * 1000, integer arithmetic for the schedule */
static int64_t total;
static int64_t *sent_ns, *answered_ns, *recv_ns;
static int32_t *target_of;
static uint8_t *accepted;
static _Atomic int64_t received_count, accepted_count, duplicates, other_events;
static _Atomic int sender_done, drain_done, listener_done;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t sched_ns(int64_t i) { return start_ns + i * interval_ns_x1000 / 1000; }

static double thread_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double process_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void fail(const char *fmt, const char *arg) {
    printf("error ");
    printf(fmt, arg);
    printf("\n");
    fflush(stdout);
    exit(2);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Growable byte buffers */

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    b->p = realloc(b->p, cap);
    if (!b->p) fail("%s", "out of memory");
    b->cap = cap;
}

static void buf_add(struct buf *b, const void *p, size_t n) {
    buf_reserve(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void buf_consume(struct buf *b, size_t n) {
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Sockets */

static int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, opt.host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) fail("connect: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* Writes all of p, waiting for the socket when it is full (only acknowledgements and PUBACK bursts can fill it). */
static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            fail("write: %s", strerror(errno));
        }
    }
}

/* Reads a blocking reply during setup (connections are non-blocking: poll by short sleeps, bounded). */
static void read_some(int fd, struct buf *b, int64_t deadline) {
    for (;;) {
        buf_reserve(b, 4096);
        ssize_t r = read(fd, b->p + b->len, b->cap - b->len);
        if (r > 0) {
            b->len += (size_t)r;
            return;
        }
        if (r == 0) fail("%s", "the server closed a connection during setup");
        if (errno != EAGAIN && errno != EINTR) fail("read: %s", strerror(errno));
        if (now_ns() > deadline) fail("%s", "setup timed out");
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------------------------------------------------------ */
/* HTTP/1.1 responses: returns the bytes the response takes at the start of p, 0 if incomplete. */

static const char *find_header(const char *head, size_t hlen, const char *name) {
    size_t nl = strlen(name);
    for (const char *l = head; l && l < head + hlen;) {
        const char *e = memchr(l, '\n', (size_t)(head + hlen - l));
        if (!e) break;
        l = e + 1;
        if ((size_t)(head + hlen - l) > nl && strncasecmp(l, name, nl) == 0) return l + nl;
    }
    return NULL;
}

static size_t http_response(const char *p, size_t n, int *status, const char **body, size_t *body_len) {
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t hlen = (size_t)(end - p) + 4;
    *status = n >= 12 ? atoi(p + 9) : 0;
    const char *cl = find_header(p, hlen, "content-length:");
    if (cl) {
        size_t len = strtoul(cl, NULL, 10);
        if (n < hlen + len) return 0;
        *body = p + hlen;
        *body_len = len;
        return hlen + len;
    }
    const char *te = find_header(p, hlen, "transfer-encoding:");
    if (te && strncasecmp(te + strspn(te, " "), "chunked", 7) == 0) {
        size_t pos = hlen;
        *body = p + hlen; /* the first chunk: enough for the success check of a small answer */
        *body_len = 0;
        for (;;) {
            const char *le = memmem(p + pos, n - pos, "\r\n", 2);
            if (!le) return 0;
            size_t size = strtoul(p + pos, NULL, 16);
            pos = (size_t)(le - p) + 2;
            if (size == 0) {
                const char *te2 = memmem(p + pos - 2, n - pos + 2, "\r\n\r\n", 4);
                return te2 ? (size_t)(te2 - p) + 4 : 0;
            }
            if (*body_len == 0) {
                *body = p + pos;
                *body_len = size;
            }
            if (n < pos + size + 2) return 0;
            pos += size + 2;
        }
    }
    *body = p + hlen;
    *body_len = 0;
    return hlen;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* MQTT 3.1.1, the little the benchmark needs */

static size_t mqtt_varint(uint8_t *out, size_t n) {
    size_t k = 0;
    do {
        uint8_t b = n % 128;
        n /= 128;
        out[k++] = n ? (b | 0x80) : b;
    } while (n);
    return k;
}

static void mqtt_packet(struct buf *b, uint8_t type, const void *body, size_t n) {
    uint8_t h[5];
    h[0] = type;
    size_t k = 1 + mqtt_varint(h + 1, n);
    buf_add(b, h, k);
    buf_add(b, body, n);
}

static void mqtt_connect(struct buf *b, const char *client_id, int clean) {
    uint8_t v[300];
    size_t idl = strlen(client_id), k = 0;
    memcpy(v, "\0\4MQTT\4", 7);
    k = 7;
    v[k++] = clean ? 0x02 : 0x00;
    v[k++] = 0x01; /* keep-alive 300 s */
    v[k++] = 0x2c;
    v[k++] = (uint8_t)(idl >> 8);
    v[k++] = (uint8_t)idl;
    memcpy(v + k, client_id, idl);
    mqtt_packet(b, 0x10, v, k + idl);
}

/* Parses one MQTT packet at the start of p: its length in bytes, 0 if incomplete; *type, *body, *blen set. */
static size_t mqtt_parse(const uint8_t *p, size_t n, uint8_t *type, const uint8_t **body, size_t *blen) {
    if (n < 2) return 0;
    size_t len = 0, mult = 1, k = 1;
    for (;;) {
        if (k >= n) return 0;
        uint8_t b = p[k++];
        len += (b & 0x7f) * mult;
        mult *= 128;
        if (!(b & 0x80)) break;
        if (k > 4) fail("%s", "bad MQTT length");
    }
    if (n - k < len) return 0;
    *type = p[0];
    *body = p + k;
    *blen = len;
    return k + len;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* The message: the scenario's notification plus data {lg_i, lg_t (scheduled send time, ns)} */

static const char NOTIFICATION[] =
    "\"priority\":\"high\",\"notification\":{\"body\":\"Status do pedido\",\"title\":\"Provedor de Mensagens\","
    "\"orderInfo\":{\"infoReason\":\"Status de pedido\",\"orderID\":3,\"userEmail\":\"matilde@siecola.com.br\","
    "\"newOrderStatus\":\"Novo pedido\"}}";

static size_t message_body(char *out, size_t cap, int64_t i, int k) {
    if (opt.target == PUSHRELAY)
        return (size_t)snprintf(out, cap, "{\"to\":\"%s\",%s,\"data\":{\"lg_i\":\"%lld\",\"lg_t\":\"%lld\"}}",
                                tokens[k], NOTIFICATION, (long long)i, (long long)sched_ns(i));
    return (size_t)snprintf(out, cap, "{%s,\"data\":{\"lg_i\":\"%lld\",\"lg_t\":\"%lld\"}}", NOTIFICATION,
                            (long long)i, (long long)sched_ns(i));
}

/* Finds "lg_i" in an event or payload and returns its number, -1 if absent. */
static int64_t find_lg_i(const char *p, size_t n) {
    const char *m = memmem(p, n, "lg_i", 4);
    if (!m) return -1;
    const char *e = p + n;
    m += 4;
    while (m < e && (*m < '0' || *m > '9')) {
        if (*m != '"' && *m != ':' && *m != ' ' && *m != '\\') return -1;
        m++;
    }
    int64_t v = 0;
    int digits = 0;
    while (m < e && *m >= '0' && *m <= '9') {
        v = v * 10 + (*m++ - '0');
        digits++;
    }
    return digits ? v : -1;
}

static void record_arrival(int64_t i, int64_t ts) {
    if (i < 0 || i >= total) {
        atomic_fetch_add_explicit(&other_events, 1, memory_order_relaxed);
        return;
    }
    if (recv_ns[i]) {
        atomic_fetch_add_explicit(&duplicates, 1, memory_order_relaxed);
        return;
    }
    recv_ns[i] = ts;
    atomic_fetch_add_explicit(&received_count, 1, memory_order_release);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Sender thread */

struct sender {
    int fd;
    int64_t seq; /* in flight, -1 if free */
    struct buf in;
    uint16_t pid;
};

static struct {
    int64_t ok, failed, unanswered, next;
    int statuses[6]; /* 0: closed, 1xx..5xx */
    char first_error[400];
    double cpu_s;
    int64_t end_ns;
} snd;

static struct sender *senders;

static void send_one(struct sender *s, int64_t i) {
    static char body[2048], req[4096];
    int k = target_of[i];
    size_t bl = message_body(body, sizeof body, i, k), n;
    if (opt.target == MQTT) {
        struct buf b = {0};
        uint8_t v[2200];
        char topic[32];
        int tl = snprintf(topic, sizeof topic, "ch%d", k);
        v[0] = (uint8_t)(tl >> 8);
        v[1] = (uint8_t)tl;
        memcpy(v + 2, topic, (size_t)tl);
        s->pid = s->pid % 65535 + 1;
        v[2 + tl] = (uint8_t)(s->pid >> 8);
        v[3 + tl] = (uint8_t)s->pid;
        memcpy(v + 4 + tl, body, bl);
        mqtt_packet(&b, 0x32, v, 4 + (size_t)tl + bl);
        s->seq = i;
        sent_ns[i] = now_ns();
        write_all(s->fd, b.p, b.len);
        free(b.p);
        return;
    }
    if (opt.target == PUSHRELAY)
        n = (size_t)snprintf(req, sizeof req,
                             "POST /fcm/send HTTP/1.1\r\nHost: %s\r\nAuthorization: key=%s\r\n"
                             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                             opt.host, opt.server_key, bl, body);
    else
        n = (size_t)snprintf(req, sizeof req,
                             "POST /pub?id=ch%d HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n\r\n%s",
                             k, opt.host, bl, body);
    s->seq = i;
    sent_ns[i] = now_ns();
    write_all(s->fd, req, n);
}

static void answered(struct sender *s, int status, const char *body, size_t blen) {
    int64_t i = s->seq;
    answered_ns[i] = now_ns();
    int good = status >= 200 && status < 300;
    if (good && opt.target == PUSHRELAY) good = memmem(body, blen, "\"success\":1", 11) != NULL;
    snd.statuses[status / 100 < 6 ? status / 100 : 0]++;
    if (good) {
        accepted[i] = 1;
        snd.ok++;
        atomic_store_explicit(&accepted_count, snd.ok, memory_order_release);
    } else {
        snd.failed++;
        if (!snd.first_error[0])
            snprintf(snd.first_error, sizeof snd.first_error, "%d %.*s", status, (int)(blen < 300 ? blen : 300),
                     body);
    }
    s->seq = -1;
}

/* Reads what the server answered on one sender connection; frees the connection when its answer is complete.
 * One read per readiness event (epoll is level-triggered: what is left wakes it again), one syscall less per answer. */
static int sender_readable(struct sender *s) {
    buf_reserve(&s->in, 8192);
    ssize_t r = read(s->fd, s->in.p + s->in.len, s->in.cap - s->in.len);
    if (r > 0)
        s->in.len += (size_t)r;
    else if (r == 0 || (errno != EAGAIN && errno != EINTR))
        return -1;
    for (;;) {
        if (opt.target == MQTT) {
            uint8_t type;
            const uint8_t *body;
            size_t blen, used = mqtt_parse((uint8_t *)s->in.p, s->in.len, &type, &body, &blen);
            if (!used) break;
            if ((type >> 4) == 4 && s->seq >= 0 && blen >= 2 && ((body[0] << 8) | body[1]) == s->pid)
                answered(s, 200, "", 0);
            buf_consume(&s->in, used);
        } else {
            int status;
            const char *body;
            size_t blen, used = http_response(s->in.p, s->in.len, &status, &body, &blen);
            if (!used) break;
            if (s->seq >= 0) answered(s, status, body, blen);
            buf_consume(&s->in, used);
        }
    }
    return 0;
}

static void *sender_main(void *arg) {
    (void)arg;
    double cpu0 = thread_cpu_s();
    int ep = epoll_create1(0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    for (int c = 0; c < opt.senders; c++) {
        ev.data.u64 = (uint64_t)c;
        epoll_ctl(ep, EPOLL_CTL_ADD, senders[c].fd, &ev);
    }
    int64_t hard_end = start_ns + (int64_t)((opt.duration + opt.drain) * 1e9);
    int inflight = 0, closed = 0;
    int64_t armed = 0;
    struct epoll_event evs[64];
    for (;;) {
        int64_t t = now_ns();
        int64_t due = t < start_ns ? 0 : (t - start_ns) * 1000 / interval_ns_x1000 + 1;
        if (due > total) due = total;
        if (t < hard_end)
            for (int c = 0; c < opt.senders && snd.next < due; c++)
                if (senders[c].seq < 0 && senders[c].fd >= 0) {
                    send_one(&senders[c], snd.next++);
                    inflight++;
                }
        if ((snd.next >= total || t >= hard_end) && inflight == 0) break;
        if (t >= hard_end + (int64_t)5e9 || closed == opt.senders) break; /* answers that never came */
        /* Sleep until the next message is due (if a connection is free) or an answer arrives. */
        int any_free = 0;
        for (int c = 0; c < opt.senders; c++) any_free |= senders[c].seq < 0 && senders[c].fd >= 0;
        int64_t wake = (any_free && snd.next < total && t < hard_end) ? sched_ns(snd.next) : hard_end + (int64_t)5e9;
        if (wake <= t) wake = t + 1000;
        if (wake != armed) { /* re-arm only when the next due time moved */
            struct itimerspec its = {{0, 0}, {wake / 1000000000, wake % 1000000000}};
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
            armed = wake;
        }
        int n = epoll_wait(ep, evs, 64, 1000);
        for (int e = 0; e < n; e++) {
            if (evs[e].data.u64 == UINT64_MAX) {
                uint64_t x;
                (void)!read(tfd, &x, sizeof x);
                armed = 0; /* expired */
                continue;
            }
            struct sender *s = &senders[evs[e].data.u64];
            int64_t was = s->seq;
            if (sender_readable(s) < 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
                close(s->fd);
                s->fd = -1;
                closed++;
                if (s->seq >= 0) inflight--; /* counted as unanswered below */
                snd.statuses[0]++;
                if (!snd.first_error[0]) snprintf(snd.first_error, sizeof snd.first_error, "connection closed");
                continue;
            }
            if (was >= 0 && s->seq < 0) inflight--;
        }
    }
    snd.end_ns = now_ns();
    for (int64_t i = 0; i < snd.next; i++)
        if (!answered_ns[i]) snd.unanswered++;
    snd.cpu_s = thread_cpu_s() - cpu0;
    close(tfd);
    close(ep);
    atomic_store(&sender_done, 1);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Listener thread */

enum { CH_SIZE, CH_DATA, CH_CRLF };

struct listener {
    int fd, k;
    int ready, chunked, chstate;
    size_t chleft;
    struct buf head, events, pend; /* pend: acknowledgement ids as a JSON list body, without brackets */
    int pend_n;
};

struct ackconn {
    int fd;
    int busy;
    struct buf in;
    int64_t ids;
};

static struct listener *lst;
static struct ackconn *acks;
struct ackreq {
    struct buf b;
    int ids;
};

static struct {
    struct ackreq *q; /* queued acknowledgement requests */
    int qhead, qlen, qcap;
    int64_t requests, ids, failed, inflight_ids;
    char first_error[300];
    double cpu_s;
    int lost_streams;
} lt;

static void ack_enqueue(struct listener *l) {
    if (!l->pend_n) return;
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "POST /v1/ack HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n{\"ids\":[",
                      opt.host, secrets[l->k], l->pend.len + 10);
    if (lt.qlen == lt.qcap) {
        int cap = lt.qcap ? lt.qcap * 2 : 1024;
        struct ackreq *q = calloc((size_t)cap, sizeof *q);
        for (int j = 0; j < lt.qlen; j++) q[j] = lt.q[(lt.qhead + j) % lt.qcap];
        free(lt.q);
        lt.q = q;
        lt.qcap = cap;
        lt.qhead = 0;
    }
    struct ackreq *r = &lt.q[(lt.qhead + lt.qlen++) % lt.qcap];
    *r = (struct ackreq){.ids = l->pend_n};
    buf_add(&r->b, head, (size_t)hn);
    buf_add(&r->b, l->pend.p, l->pend.len);
    buf_add(&r->b, "]}", 2);
    l->pend.len = 0;
    lt.inflight_ids += l->pend_n;
    l->pend_n = 0;
}

static void ack_pump(void) {
    for (int c = 0; c < opt.ack_conns && lt.qlen; c++) {
        struct ackconn *a = &acks[c];
        if (a->busy || a->fd < 0) continue;
        struct ackreq *r = &lt.q[lt.qhead];
        lt.qhead = (lt.qhead + 1) % lt.qcap;
        lt.qlen--;
        a->ids = r->ids;
        a->busy = 1;
        write_all(a->fd, r->b.p, r->b.len);
        free(r->b.p);
    }
}

static int ack_readable(struct ackconn *a) {
    for (;;) {
        buf_reserve(&a->in, 4096);
        ssize_t r = read(a->fd, a->in.p + a->in.len, a->in.cap - a->in.len);
        if (r > 0) {
            a->in.len += (size_t)r;
            continue;
        }
        if (r == 0) return -1;
        if (errno == EAGAIN) break;
        if (errno != EINTR) return -1;
    }
    for (;;) {
        int status;
        const char *body;
        size_t blen, used = http_response(a->in.p, a->in.len, &status, &body, &blen);
        if (!used) break;
        lt.requests++;
        if (status >= 200 && status < 300) {
            lt.ids += a->ids;
        } else {
            lt.failed++;
            if (!lt.first_error[0])
                snprintf(lt.first_error, sizeof lt.first_error, "%d %.*s", status, (int)(blen < 200 ? blen : 200),
                         body);
        }
        lt.inflight_ids -= a->ids;
        a->busy = 0;
        buf_consume(&a->in, used);
    }
    return 0;
}

static void on_event(struct listener *l, const char *ev, size_t n, int64_t ts) {
    if (n && ev[0] == ':') return; /* a comment: heartbeat */
    record_arrival(find_lg_i(ev, n), ts);
    if (opt.target != PUSHRELAY) return;
    /* "id: <id>" line: remember it for the next acknowledgement of this device */
    for (const char *p = ev; p && p < ev + n;) {
        if ((size_t)(ev + n - p) > 3 && memcmp(p, "id:", 3) == 0) {
            const char *v = p + 3 + (p[3] == ' ');
            const char *e = memchr(v, '\n', (size_t)(ev + n - v));
            size_t vl = e ? (size_t)(e - v) : (size_t)(ev + n - v);
            if (l->pend_n) buf_add(&l->pend, ",", 1);
            buf_add(&l->pend, "\"", 1);
            buf_add(&l->pend, v, vl);
            buf_add(&l->pend, "\"", 1);
            l->pend_n++;
            return;
        }
        const char *e = memchr(p, '\n', (size_t)(ev + n - p));
        p = e ? e + 1 : NULL;
    }
}

/* SSE bytes after the head (chunked or identity): split into events at blank lines, '\r' dropped. */
static void sse_bytes(struct listener *l, const char *p, size_t n, int64_t ts) {
    size_t old = l->events.len;
    buf_reserve(&l->events, n);
    for (size_t j = 0; j < n; j++)
        if (p[j] != '\r') l->events.p[l->events.len++] = p[j];
    size_t from = old > 0 ? old - 1 : 0, start = 0;
    for (;;) {
        const char *e = memmem(l->events.p + from, l->events.len - from, "\n\n", 2);
        if (!e) break;
        size_t end = (size_t)(e - l->events.p);
        on_event(l, l->events.p + start, end - start, ts);
        start = from = end + 2;
    }
    if (start) buf_consume(&l->events, start);
}

static void dechunk(struct listener *l, const char *p, size_t n, int64_t ts) {
    size_t j = 0;
    while (j < n) {
        if (l->chstate == CH_DATA) {
            size_t take = n - j < l->chleft ? n - j : l->chleft;
            sse_bytes(l, p + j, take, ts);
            j += take;
            l->chleft -= take;
            if (!l->chleft) l->chstate = CH_CRLF;
        } else if (l->chstate == CH_CRLF) {
            if (p[j++] == '\n') l->chstate = CH_SIZE;
        } else { /* size line, hex, up to '\n' */
            char c = p[j++];
            if (c == '\n') {
                l->chstate = l->chleft ? CH_DATA : CH_SIZE; /* a 0 chunk ends the stream; the close tells */
            } else if (c != '\r' && c != ';') {
                int lc = c | 0x20;
                int d = c >= '0' && c <= '9' ? c - '0' : lc >= 'a' && lc <= 'f' ? lc - 'a' + 10 : -1;
                if (d >= 0) l->chleft = l->chleft * 16 + (size_t)d;
            }
        }
    }
}

static void listener_bytes(struct listener *l, const char *p, size_t n, int64_t ts) {
    if (opt.target == MQTT) {
        buf_add(&l->events, p, n);
        struct buf out = {0};
        size_t pos = 0;
        for (;;) {
            uint8_t type;
            const uint8_t *body;
            size_t blen, used = mqtt_parse((uint8_t *)l->events.p + pos, l->events.len - pos, &type, &body, &blen);
            if (!used) break;
            pos += used;
            switch (type >> 4) {
            case 2: /* CONNACK */
                if (blen < 2 || body[1] != 0) fail("%s", "mosquitto refused a listener's CONNECT");
                {
                    char topic[32];
                    uint8_t v[64];
                    int tl = snprintf(topic, sizeof topic, "ch%d", l->k);
                    v[0] = 0, v[1] = 1, v[2] = 0, v[3] = (uint8_t)tl;
                    memcpy(v + 4, topic, (size_t)tl);
                    v[4 + tl] = 1;
                    struct buf b = {0};
                    mqtt_packet(&b, 0x82, v, 5 + (size_t)tl);
                    write_all(l->fd, b.p, b.len);
                    free(b.p);
                }
                break;
            case 9: /* SUBACK */
                if (blen < 3 || body[2] == 0x80) fail("%s", "mosquitto refused a subscription");
                l->ready = 1;
                break;
            case 3: { /* PUBLISH */
                size_t tl = ((size_t)body[0] << 8) | body[1], off = 2 + tl;
                if ((type >> 1) & 3) {
                    uint8_t ack[4] = {0x40, 2, body[off], body[off + 1]};
                    buf_add(&out, ack, 4);
                    off += 2;
                }
                record_arrival(find_lg_i((const char *)body + off, blen - off), ts);
                break;
            }
            default:
                break;
            }
        }
        if (pos) buf_consume(&l->events, pos);
        if (out.len) write_all(l->fd, out.p, out.len);
        free(out.p);
        return;
    }
    if (!l->ready) {
        buf_add(&l->head, p, n);
        const char *e = memmem(l->head.p, l->head.len, "\r\n\r\n", 4);
        if (!e) return;
        size_t hl = (size_t)(e - l->head.p) + 4;
        char status[4] = {0};
        memcpy(status, l->head.p + 9, 3);
        if (strcmp(status, "200") != 0) fail("a stream was answered HTTP %s", status);
        const char *te = find_header(l->head.p, hl, "transfer-encoding:");
        l->chunked = te && strncasecmp(te + strspn(te, " "), "chunked", 7) == 0;
        l->ready = 1;
        size_t rest = l->head.len - hl;
        char *tmp = malloc(rest + 1);
        memcpy(tmp, l->head.p + hl, rest);
        free(l->head.p);
        l->head = (struct buf){0};
        if (rest) listener_bytes(l, tmp, rest, ts);
        free(tmp);
        return;
    }
    if (l->chunked)
        dechunk(l, p, n, ts);
    else
        sse_bytes(l, p, n, ts);
}

static int ep_listen;

static void listener_loop(int64_t until_ready) {
    static char rbuf[1 << 16];
    struct epoll_event evs[256];
    int tfd = -1;
    int slots = (int)(opt.ack_interval / 0.05);
    if (slots < 1) slots = 1;
    if (opt.target == PUSHRELAY && !until_ready) {
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
        struct itimerspec its = {{0, 50000000}, {0, 50000000}};
        timerfd_settime(tfd, 0, &its, NULL);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
        epoll_ctl(ep_listen, EPOLL_CTL_ADD, tfd, &ev);
    }
    int tick = 0, ready = 0;
    int64_t flush_end = 0;
    for (;;) {
        if (until_ready) {
            ready = 0;
            for (int k = 0; k < opt.listeners; k++) ready += lst[k].ready;
            if (ready == opt.listeners) break;
            if (now_ns() > until_ready) fail("%s", "listeners did not all connect within 60 s");
        } else if (atomic_load(&drain_done)) {
            /* the last acknowledgements, bounded in time */
            if (!flush_end) {
                flush_end = now_ns() + (int64_t)5e9;
                for (int k = 0; k < opt.listeners && opt.target == PUSHRELAY; k++) ack_enqueue(&lst[k]);
                if (opt.target == PUSHRELAY) ack_pump();
            }
            int busy = lt.qlen;
            for (int c = 0; c < opt.ack_conns && opt.target == PUSHRELAY; c++) busy += acks[c].busy;
            if (!busy || now_ns() > flush_end) break;
        }
        int n = epoll_wait(ep_listen, evs, 256, 20);
        for (int e = 0; e < n; e++) {
            uint64_t id = evs[e].data.u64;
            if (id == UINT64_MAX) { /* ack tick: one slot of devices every 50 ms */
                uint64_t x;
                (void)!read(tfd, &x, sizeof x);
                if (!atomic_load(&drain_done)) {
                    for (int k = tick % slots; k < opt.listeners; k += slots) ack_enqueue(&lst[k]);
                    tick++;
                }
                ack_pump();
                continue;
            }
            if (id >= (uint64_t)opt.listeners) {
                struct ackconn *a = &acks[id - (uint64_t)opt.listeners];
                if (ack_readable(a) < 0) {
                    epoll_ctl(ep_listen, EPOLL_CTL_DEL, a->fd, NULL);
                    close(a->fd);
                    a->fd = -1;
                    if (!lt.first_error[0]) snprintf(lt.first_error, sizeof lt.first_error, "ack connection closed");
                }
                ack_pump();
                continue;
            }
            struct listener *l = &lst[id];
            ssize_t r = read(l->fd, rbuf, sizeof rbuf); /* once: level-triggered epoll reports the rest */
            if (r > 0) {
                listener_bytes(l, rbuf, (size_t)r, now_ns());
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                if (until_ready) fail("%s", "a listener's connection closed during setup");
                epoll_ctl(ep_listen, EPOLL_CTL_DEL, l->fd, NULL);
                close(l->fd);
                l->fd = -1;
                lt.lost_streams++;
            }
        }
    }
    if (tfd >= 0) {
        epoll_ctl(ep_listen, EPOLL_CTL_DEL, tfd, NULL);
        close(tfd);
    }
}

static void *listener_main(void *arg) {
    (void)arg;
    double cpu0 = thread_cpu_s();
    listener_loop(0);
    lt.cpu_s = thread_cpu_s() - cpu0;
    atomic_store(&listener_done, 1);
    return NULL;
}

/* Opens every stream and waits until each is established (HTTP 200 / SUBACK). */
static void connect_listeners(void) {
    ep_listen = epoll_create1(0);
    lst = calloc((size_t)opt.listeners, sizeof *lst);
    for (int k = 0; k < opt.listeners; k++) {
        struct listener *l = &lst[k];
        l->k = k;
        l->fd = connect_loopback(opt.listen_port);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)k};
        epoll_ctl(ep_listen, EPOLL_CTL_ADD, l->fd, &ev);
        char req[1024];
        int n = 0;
        if (opt.target == PUSHRELAY)
            n = snprintf(req, sizeof req,
                         "GET /v1/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
                         "Accept: text/event-stream\r\n\r\n",
                         opt.host, secrets[k]);
        else if (opt.target == NCHAN)
            n = snprintf(req, sizeof req, "GET /sub/ch%d HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", k,
                         opt.host);
        if (opt.target == MQTT) {
            struct buf b = {0};
            char id[32];
            snprintf(id, sizeof id, "sub%d", k);
            mqtt_connect(&b, id, 0);
            write_all(l->fd, b.p, b.len);
            free(b.p);
        } else {
            write_all(l->fd, req, (size_t)n);
        }
    }
    listener_loop(now_ns() + (int64_t)60e9);
    if (opt.target == PUSHRELAY) {
        acks = calloc((size_t)opt.ack_conns, sizeof *acks);
        for (int c = 0; c < opt.ack_conns; c++) {
            acks[c].fd = connect_loopback(opt.listen_port);
            struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(opt.listeners + c)};
            epoll_ctl(ep_listen, EPOLL_CTL_ADD, acks[c].fd, &ev);
        }
    }
}

static void connect_senders(void) {
    senders = calloc((size_t)opt.senders, sizeof *senders);
    for (int c = 0; c < opt.senders; c++) {
        struct sender *s = &senders[c];
        s->fd = connect_loopback(opt.port);
        s->seq = -1;
        if (opt.target == MQTT) {
            struct buf b = {0}, in = {0};
            char id[64];
            snprintf(id, sizeof id, "pub%d-%d", c, (int)getpid());
            mqtt_connect(&b, id, 1);
            write_all(s->fd, b.p, b.len);
            free(b.p);
            int64_t deadline = now_ns() + (int64_t)30e9;
            uint8_t type = 0;
            const uint8_t *body;
            size_t blen;
            while (!mqtt_parse((uint8_t *)in.p, in.len, &type, &body, &blen)) read_some(s->fd, &in, deadline);
            if ((type >> 4) != 2 || body[1] != 0) fail("%s", "mosquitto refused a sender's CONNECT");
            free(in.p);
        }
    }
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Report */

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void print_summary(const char *name, int64_t *v, int64_t n, int last) {
    printf("\"%s\":{\"n\":%lld", name, (long long)n);
    if (n) {
        qsort(v, (size_t)n, sizeof *v, cmp64);
        double sum = 0;
        for (int64_t j = 0; j < n; j++) sum += (double)v[j];
        const double qs[] = {0.5, 0.9, 0.99, 0.999};
        const char *qn[] = {"p50", "p90", "p99", "p999"};
        for (int q = 0; q < 4; q++) {
            int64_t r = (int64_t)ceil(qs[q] * (double)n) - 1;
            if (r < 0) r = 0;
            printf(",\"%s_us\":%.1f", qn[q], v[r] / 1000.0);
        }
        printf(",\"min_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f", v[0] / 1000.0, v[n - 1] / 1000.0,
               sum / (double)n / 1000.0);
    }
    printf("}%s", last ? "" : ",");
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void report(double wall_s, double cpu_s) {
    int64_t *a = malloc((size_t)(total ? total : 1) * sizeof *a);
    int64_t n, sent = snd.next, lost = 0, recv_not_accepted = 0, last_recv = 0;
    for (int64_t i = 0; i < sent; i++) {
        if (accepted[i] && !recv_ns[i]) lost++;
        if (!accepted[i] && recv_ns[i]) recv_not_accepted++;
        if (recv_ns[i] > last_recv) last_recv = recv_ns[i];
    }
    int64_t last_sent = sent ? sent_ns[sent - 1] : start_ns;
    printf("{\"target\":\"%s\",\"rate\":%.0f,\"duration_s\":%.3f,\"senders\":%d,\"listeners\":%d,",
           opt.target == PUSHRELAY ? "pushrelay" : opt.target == NCHAN ? "nchan" : "mqtt", opt.rate, opt.duration,
           opt.senders, opt.listeners);
    printf("\"scheduled\":%lld,\"sent\":%lld,\"unsent\":%lld,\"ok\":%lld,\"failed\":%lld,\"unanswered\":%lld,",
           (long long)total, (long long)sent, (long long)(total - sent), (long long)snd.ok, (long long)snd.failed,
           (long long)snd.unanswered);
    printf("\"received\":%lld,\"lost\":%lld,\"received_not_accepted\":%lld,\"duplicates\":%lld,"
           "\"other_events\":%lld,\"lost_streams\":%d,",
           (long long)atomic_load(&received_count), (long long)lost, (long long)recv_not_accepted,
           (long long)atomic_load(&duplicates), (long long)atomic_load(&other_events), lt.lost_streams);
    printf("\"statuses\":{\"closed\":%d,\"1xx\":%d,\"2xx\":%d,\"3xx\":%d,\"4xx\":%d,\"5xx\":%d},\"first_error\":",
           snd.statuses[0], snd.statuses[1], snd.statuses[2], snd.statuses[3], snd.statuses[4], snd.statuses[5]);
    json_string(snd.first_error);
    /* achieved rates: messages over the time from the start to the last send / the last arrival */
    printf(",\"send_rate\":%.1f,\"delivered_rate\":%.1f,",
           sent > 1 ? (double)sent / ((double)(last_sent - start_ns) / 1e9 + 1.0 / opt.rate) : 0.0,
           last_recv > start_ns ? (double)atomic_load(&received_count) / ((double)(last_recv - start_ns) / 1e9) : 0.0);
    n = 0;
    for (int64_t i = 0; i < sent; i++)
        if (recv_ns[i]) a[n++] = recv_ns[i] - sched_ns(i);
    print_summary("latency", a, n, 0); /* from the scheduled send time: what a sender waiting in line sees */
    n = 0;
    for (int64_t i = 0; i < sent; i++)
        if (recv_ns[i]) a[n++] = recv_ns[i] - sent_ns[i];
    print_summary("latency_from_write", a, n, 0);
    n = 0;
    for (int64_t i = 0; i < sent; i++) a[n++] = sent_ns[i] - sched_ns(i);
    print_summary("schedule_lag", a, n, 0);
    n = 0;
    for (int64_t i = 0; i < sent; i++)
        if (answered_ns[i]) a[n++] = answered_ns[i] - sent_ns[i];
    print_summary("answer", a, n, 0);
    /* the five slowest answers, with when they were sent (seconds from the start): a stall's moment in the run */
    printf("\"slowest_answers\":[");
    int64_t top[5] = {-1, -1, -1, -1, -1};
    for (int64_t i = 0; i < sent; i++) {
        if (!answered_ns[i]) continue;
        int64_t d = answered_ns[i] - sent_ns[i];
        for (int k = 0; k < 5; k++) {
            if (top[k] < 0 || d > answered_ns[top[k]] - sent_ns[top[k]]) {
                memmove(&top[k + 1], &top[k], (size_t)(4 - k) * sizeof top[0]);
                top[k] = i;
                break;
            }
        }
    }
    for (int k = 0; k < 5 && top[k] >= 0; k++)
        printf("%s{\"sent_at_s\":%.3f,\"answer_ms\":%.1f}", k ? "," : "", (double)(sent_ns[top[k]] - start_ns) / 1e9,
               (double)(answered_ns[top[k]] - sent_ns[top[k]]) / 1e6);
    printf("],");
    /* per second of the schedule: how many, and the p99 of latency from the schedule and of the answer — whether the
       tail is a moment (the start, a checkpoint, the host) or the whole run */
    printf("\"timeline\":[");
    int64_t *b = malloc((size_t)(total ? total : 1) * sizeof *b);
    for (int w = 0; (double)w < opt.duration; w++) {
        int64_t from = (int64_t)((double)w * opt.rate), to = (int64_t)((double)(w + 1) * opt.rate);
        if (to > sent) to = sent;
        int64_t nl = 0, na = 0;
        for (int64_t i = from; i < to; i++) {
            if (recv_ns[i]) a[nl++] = recv_ns[i] - sched_ns(i);
            if (answered_ns[i]) b[na++] = answered_ns[i] - sent_ns[i];
        }
        qsort(a, (size_t)nl, sizeof *a, cmp64);
        qsort(b, (size_t)na, sizeof *b, cmp64);
        int64_t rl = nl ? (int64_t)ceil(0.99 * (double)nl) - 1 : 0, ra = na ? (int64_t)ceil(0.99 * (double)na) - 1 : 0;
        printf("%s{\"second\":%d,\"n\":%lld,\"p99_us\":%.1f,\"answer_p99_us\":%.1f}", w ? "," : "", w,
               (long long)nl, nl ? a[rl] / 1000.0 : 0.0, na ? b[ra] / 1000.0 : 0.0);
    }
    free(b);
    printf("],");
    printf("\"ack\":{\"requests\":%lld,\"ids\":%lld,\"failed\":%lld,\"first_error\":", (long long)lt.requests,
           (long long)lt.ids, (long long)lt.failed);
    json_string(lt.first_error);
    printf("},\"generator\":{\"cpu_s\":%.3f,\"sender_thread_cpu_s\":%.3f,\"listener_thread_cpu_s\":%.3f,"
           "\"wall_s\":%.3f,\"cores\":%.3f}}\n",
           cpu_s, snd.cpu_s, lt.cpu_s, wall_s, wall_s > 0 ? cpu_s / wall_s : 0.0);
    fflush(stdout);
    free(a);
}

/* ------------------------------------------------------------------------------------------------------------ */

static void load_devices(void) {
    tokens = calloc((size_t)opt.listeners, sizeof *tokens);
    secrets = calloc((size_t)opt.listeners, sizeof *secrets);
    if (opt.target != PUSHRELAY) return;
    if (!opt.devices_file || !opt.server_key) fail("%s", "pushrelay needs --devices and --server-key");
    FILE *f = fopen(opt.devices_file, "r");
    if (!f) fail("cannot open %s", opt.devices_file);
    char t[1024], s[1024];
    for (int k = 0; k < opt.listeners; k++) {
        if (fscanf(f, "%1023s %1023s", t, s) != 2) fail("%s", "fewer devices in --devices than --listeners");
        tokens[k] = strdup(t);
        secrets[k] = strdup(s);
    }
    fclose(f);
}

static void usage(void) {
    fprintf(stderr, "usage: relaygen --target pushrelay|nchan|mqtt --port P [--host 127.0.0.1] [--rate 5000]\n"
                    "  [--duration 10] [--drain 10] [--senders 8] [--listeners 1000] [--devices FILE]\n"
                    "  [--server-key KEY] [--ack-interval 1] [--ack-conns 4] [--seed 1]\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int j = 1; j < argc; j++) {
        const char *a = argv[j], *v = j + 1 < argc ? argv[j + 1] : NULL;
        if (!v) usage();
        j++;
        if (!strcmp(a, "--target"))
            opt.target = !strcmp(v, "pushrelay") ? PUSHRELAY
                         : !strcmp(v, "nchan")   ? NCHAN
                         : !strcmp(v, "mqtt")    ? MQTT
                                                 : (usage(), 0);
        else if (!strcmp(a, "--host")) opt.host = v;
        else if (!strcmp(a, "--port")) opt.port = atoi(v);
        else if (!strcmp(a, "--listen-port")) opt.listen_port = atoi(v);
        else if (!strcmp(a, "--rate")) opt.rate = atof(v);
        else if (!strcmp(a, "--duration")) opt.duration = atof(v);
        else if (!strcmp(a, "--drain")) opt.drain = atof(v);
        else if (!strcmp(a, "--senders")) opt.senders = atoi(v);
        else if (!strcmp(a, "--listeners")) opt.listeners = atoi(v);
        else if (!strcmp(a, "--devices")) opt.devices_file = v;
        else if (!strcmp(a, "--server-key")) opt.server_key = v;
        else if (!strcmp(a, "--ack-interval")) opt.ack_interval = atof(v);
        else if (!strcmp(a, "--ack-conns")) opt.ack_conns = atoi(v);
        else if (!strcmp(a, "--seed")) opt.seed = strtoull(v, NULL, 10);
        else usage();
    }
    struct in_addr ia;
    if (inet_pton(AF_INET, opt.host, &ia) != 1 || (ntohl(ia.s_addr) >> 24) != 127)
        fail("%s is not a loopback IPv4 address; refusing", opt.host);
    if (opt.listen_port == 0) opt.listen_port = opt.port;
    if (opt.port <= 0 || opt.rate <= 0 || opt.duration <= 0 || opt.senders < 1 || opt.senders > 1024 ||
        opt.listeners < 1 || opt.listeners > 20000 || opt.rate * opt.duration > 5e7)
        usage();
    prctl(PR_SET_TIMERSLACK, 1UL); /* timers wake on time, not up to 50 us late */
    load_devices();

    total = (int64_t)llround(opt.rate * opt.duration);
    interval_ns_x1000 = (int64_t)llround(1e12 / opt.rate);
    sent_ns = calloc((size_t)total, sizeof *sent_ns);
    answered_ns = calloc((size_t)total, sizeof *answered_ns);
    recv_ns = calloc((size_t)total, sizeof *recv_ns);
    accepted = calloc((size_t)total, 1);
    target_of = calloc((size_t)total, sizeof *target_of);
    uint64_t x = opt.seed * 0x9E3779B97F4A7C15ULL + 1; /* xorshift64*: the same devices for every system */
    for (int64_t i = 0; i < total; i++) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        target_of[i] = (int32_t)(((x * 0x2545F4914F6CDD1DULL) >> 33) % (uint64_t)opt.listeners);
    }

    connect_listeners();
    connect_senders();
    printf("ready %d\n", opt.listeners);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 2;

    double cpu0 = process_cpu_s();
    int64_t t0 = now_ns();
    start_ns = t0 + 20000000; /* 20 ms: both threads are running when message 0 is due */
    pthread_t ts, tl;
    pthread_create(&tl, NULL, listener_main, NULL);
    pthread_create(&ts, NULL, sender_main, NULL);
    pthread_join(ts, NULL);
    /* Drain: until every accepted message has arrived, bounded. */
    int64_t drain_end = now_ns() + (int64_t)(opt.drain * 1e9);
    while (atomic_load(&received_count) < atomic_load(&accepted_count) && now_ns() < drain_end) {
        struct timespec d = {0, 2000000};
        nanosleep(&d, NULL);
    }
    atomic_store(&drain_done, 1);
    pthread_join(tl, NULL);
    double wall = (double)(now_ns() - t0) / 1e9, cpu = process_cpu_s() - cpu0;
    printf("finished\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) return 2;
    report(wall, cpu);
    return 0;
}
