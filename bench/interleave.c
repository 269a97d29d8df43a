// bench/interleave.c - wall time of several commands, sampled round-robin.
//
// Usage: interleave RUNS CMD1 [ARGS...] ::: CMD2 [ARGS...] [::: ...]
//
// Each round runs every command once, in order (after 10 untimed rounds), so a slow
// stretch of a shared machine lands on every row alike; hyperfine times one row after
// another. Commands are started with posix_spawn (stdout to /dev/null) and timed from
// spawn to waitpid. Prints, per command, the median and quartiles in ms, and the median
// of the per-round differences to the first command (a paired comparison).
// INTERLEAVE_PREPARE=SCRIPT runs `/bin/sh -c SCRIPT` untimed before every timed command
// (as hyperfine's --prepare does), e.g. to move the last run's output out of the way.
// Build: cc -O2 -o interleave bench/interleave.c
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char** environ;

enum { k_max_cmds = 32, k_warmup = 10 };

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double run_once(char** argv, const posix_spawn_file_actions_t* fa) {
  struct timespec a, b;
  pid_t pid;
  int st;
  const char* prep = getenv("INTERLEAVE_PREPARE");
  if (prep != NULL && *prep != '\0') {
    char* sh[] = {"/bin/sh", "-c", (char*)prep, NULL};
    if (posix_spawn(&pid, sh[0], fa, NULL, sh, environ) != 0) {
      fprintf(stderr, "interleave: cannot start /bin/sh\n");
      exit(2);
    }
    while (waitpid(pid, &st, 0) < 0) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "interleave: the prepare script failed (status %d)\n", st);
      exit(1);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (posix_spawn(&pid, argv[0], fa, NULL, argv, environ) != 0) {
    fprintf(stderr, "interleave: cannot start %s\n", argv[0]);
    exit(2);
  }
  while (waitpid(pid, &st, 0) < 0) {
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "interleave: %s failed (status %d)\n", argv[0], st);
    exit(1);
  }
  return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 3 || atoi(argv[1]) < 1) {
    fprintf(stderr, "usage: interleave RUNS CMD [ARGS...] [::: CMD [ARGS...]]...\n");
    return 2;
  }
  int runs = atoi(argv[1]), n = 0;
  char** cmds[k_max_cmds];
  cmds[n++] = &argv[2];
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], ":::") != 0) continue;
    if (n == k_max_cmds || i + 1 >= argc) {
      fprintf(stderr, "interleave: too many commands, or an empty one\n");
      return 2;
    }
    argv[i] = NULL;
    cmds[n++] = &argv[i + 1];
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  double* t[k_max_cmds];
  double* diff[k_max_cmds];
  for (int c = 0; c < n; ++c) {
    t[c] = malloc(sizeof(double) * (size_t)runs);
    diff[c] = malloc(sizeof(double) * (size_t)runs);
  }
  for (int w = 0; w < k_warmup; ++w) {
    for (int c = 0; c < n; ++c) run_once(cmds[c], &fa);
  }
  for (int r = 0; r < runs; ++r) {
    for (int c = 0; c < n; ++c) t[c][r] = run_once(cmds[c], &fa);
    for (int c = 0; c < n; ++c) diff[c][r] = t[c][r] - t[0][r];
  }
  printf("| command | median ms | p25 | p75 | median of paired (row - first row) |\n|---|---:|---:|---:|---:|\n");
  for (int c = 0; c < n; ++c) {
    double d = median(diff[c], runs);
    double m = median(t[c], runs);  // sorts t[c]
    printf("| `");
    for (char** a = cmds[c]; *a != NULL; ++a) printf("%s%s", a == cmds[c] ? "" : " ", *a);
    printf("` | %.3f | %.3f | %.3f | %+.3f |\n", m, t[c][runs / 4], t[c][(3 * runs) / 4], d);
  }
  return 0;
}
