/*
 * What a hand-off between two threads costs on this machine: two threads pass a token back and forth through
 * eventfds (as an event loop and the store's writer do), N round trips, each two wake-ups and four context switches.
 * Prints one JSON line: CPU (user + system, both threads) and wall time per round trip, in microseconds.
 * run-relay.sh compiles it; Benchmarks/relay/run.py reports it beside fdatasync as a floor of the message path.
 *
 *   cc -O2 -pthread -o wakeup Benchmarks/relay/wakeup.c && ./wakeup [round trips, default 100000]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int to_peer, to_main;
static long rounds = 100000;

static void pass(int fd) {
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != sizeof one) abort();
}

static void await_token(int fd) {
    uint64_t value;
    if (read(fd, &value, sizeof value) != sizeof value) abort();
}

static void *peer(void *unused) {
    (void)unused;
    for (long i = 0; i < rounds; i++) {
        await_token(to_peer);
        pass(to_main);
    }
    return NULL;
}

static double micros(struct timeval t) { return t.tv_sec * 1e6 + t.tv_usec; }

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    if (rounds <= 0) return 2;
    to_peer = eventfd(0, 0);
    to_main = eventfd(0, 0);
    if (to_peer < 0 || to_main < 0) return 1;
    struct rusage before, after;
    struct timespec start, end;
    getrusage(RUSAGE_SELF, &before);
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t thread;
    if (pthread_create(&thread, NULL, peer, NULL) != 0) return 1;
    for (long i = 0; i < rounds; i++) {
        pass(to_peer);
        await_token(to_main);
    }
    pthread_join(thread, NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    getrusage(RUSAGE_SELF, &after);
    double cpu = micros(after.ru_utime) - micros(before.ru_utime) + micros(after.ru_stime) - micros(before.ru_stime);
    double wall = (end.tv_sec - start.tv_sec) * 1e6 + (end.tv_nsec - start.tv_nsec) / 1e3;
    printf("{\"round_trips\": %ld, \"cpu_us\": %.2f, \"wall_us\": %.2f}\n", rounds, cpu / rounds, wall / rounds);
    return 0;
}
