/* The CPF and CNPJ validation of BrazilianDocuments (Sources/BrazilianDocuments/Scanner.swift),
 * transcribed to C: same single pass, same separators and whitespace, same repeated-sequence
 * rule, same alphanumeric CNPJ rule (ASCII code minus 48). Reads the inputs cepis-bench
 * wrote (`gen-docs DIR`) and prints ns per call in the same key=value form.
 * Build: cc -O2 -o documents documents.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int is_space(unsigned char b) { return b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D; }
static int check_digit(int sum) { int r = sum % 11; return r < 2 ? 0 : 11 - r; }

__attribute__((noinline)) int cpf_is_valid(const unsigned char *s, size_t n) {
  unsigned char d[11];
  int count = 0, first = 0, second = 0, all_same = 1;
  for (size_t i = 0; i < n; i++) {
    unsigned char b = s[i];
    if (b >= '0' && b <= '9') {
      if (count < 11) {
        int v = b - '0';
        if (count < 9) { first += v * (10 - count); second += v * (11 - count); }
        else if (count == 9) second += v * 2;
        if (count > 0 && b != d[0]) all_same = 0;
        d[count] = b;
      }
      count++;
    } else if (b == '.' || b == '-') {
    } else if (!is_space(b)) return 0;
  }
  if (count != 11 || all_same) return 0;
  return d[9] - '0' == check_digit(first) && d[10] - '0' == check_digit(second);
}

__attribute__((noinline)) int cnpj_is_valid(const unsigned char *s, size_t n) {
  unsigned char c[14];
  int count = 0, first = 0, second = 0, all_same = 1;
  for (size_t i = 0; i < n; i++) {
    unsigned char b = s[i], u = b;
    if (b >= '0' && b <= '9') {
    } else if (b >= 'A' && b <= 'Z') {
      if (count == 12 || count == 13) return 0;
    } else if (b >= 'a' && b <= 'z') {
      if (count == 12 || count == 13) return 0;
      u = b - 0x20;
    } else if (b == '.' || b == '/' || b == '-') {
      continue;
    } else {
      if (!is_space(b)) return 0;
      continue;
    }
    if (count < 14) {
      int v = u - '0';
      if (count < 12) {
        first += v * ((11 - count) % 8 + 2);
        second += v * ((12 - count) % 8 + 2);
      } else if (count == 12) second += v * 2;
      if (count > 0 && u != c[0]) all_same = 0;
      c[count] = u;
    }
    count++;
  }
  if (count != 14 || all_same) return 0;
  return c[12] - '0' == check_digit(first) && c[13] - '0' == check_digit(second);
}

typedef struct { unsigned char **items; size_t *lengths; size_t count; } lines_t;

static lines_t read_lines(const char *path) {
  lines_t out = {0};
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  size_t cap = 1024;
  out.items = malloc(cap * sizeof *out.items);
  out.lengths = malloc(cap * sizeof *out.lengths);
  char buf[256];
  while (fgets(buf, sizeof buf, f)) {
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n')) n--;
    if (!n) continue;
    if (out.count == cap) {
      cap *= 2;
      out.items = realloc(out.items, cap * sizeof *out.items);
      out.lengths = realloc(out.lengths, cap * sizeof *out.lengths);
    }
    out.items[out.count] = malloc(n);
    memcpy(out.items[out.count], buf, n);
    out.lengths[out.count++] = n;
  }
  fclose(f);
  return out;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static double bench(lines_t l, int (*check)(const unsigned char *, size_t), long iterations,
                    long *valid_out) {
  volatile long sink = 0;
  long valid = 0;
  double t0 = now_ns();
  for (long it = 0; it < iterations; it++)
    for (size_t i = 0; i < l.count; i++) valid += check(l.items[i], l.lengths[i]);
  double ns = (now_ns() - t0) / ((double)iterations * l.count);
  sink = valid;
  *valid_out = sink / iterations;
  return ns;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: documents DIR [ITERATIONS]\n"); return 2; }
  long iterations = argc > 2 ? atol(argv[2]) : 200;
  char path[4096];
  snprintf(path, sizeof path, "%s/cpf.txt", argv[1]);
  lines_t cpf = read_lines(path);
  snprintf(path, sizeof path, "%s/cnpj.txt", argv[1]);
  lines_t cnpj = read_lines(path);
  long valid;
  bench(cpf, cpf_is_valid, iterations, &valid); /* warm-up */
  double cpf_ns = bench(cpf, cpf_is_valid, iterations, &valid);
  printf("cpf_ns=%.2f\ncpf_valid=%ld\n", cpf_ns, valid);
  double cnpj_ns = bench(cnpj, cnpj_is_valid, iterations, &valid);
  printf("cnpj_ns=%.2f\ncnpj_valid=%ld\n", cnpj_ns, valid);
  return 0;
}
