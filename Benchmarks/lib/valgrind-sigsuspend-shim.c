/*
 * LD_PRELOAD shim for running the daemon under valgrind 3.19 (Debian 12): libdispatch's main thread parks in
 * sigsuspend() with a mask in read-only memory, and valgrind 3.19's rt_sigsuspend wrapper writes into that mask,
 * which kills valgrind itself ("VALGRIND INTERNAL ERROR: signal 11" at the mask's address). This shim hands libc a
 * copy on the stack. It runs once per sigsuspend (the main thread parks once), so it does not move the figure.
 *
 *   cc -O2 -shared -fPIC -o shim.so valgrind-sigsuspend-shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*real)(const sigset_t *);
    if (!real) real = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    sigset_t copy = *mask;
    return real(&copy);
}
