"""python-stdnum (the peer) on the same inputs as cepis-bench documents: ns per is_valid call."""
import sys
import time

from stdnum.br import cnpj, cpf


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip("\n")]


def bench(items, check, iterations):
    check(items[0])
    valid = 0
    t0 = time.perf_counter_ns()
    for _ in range(iterations):
        for item in items:
            if check(item):
                valid += 1
    ns = (time.perf_counter_ns() - t0) / (iterations * len(items))
    return ns, valid // iterations


directory = sys.argv[1]
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 5
ns, valid = bench(lines(directory + "/cpf.txt"), cpf.is_valid, iterations)
print(f"cpf_ns={ns:.1f}\ncpf_valid={valid}")
ns, valid = bench(lines(directory + "/cnpj.txt"), cnpj.is_valid, iterations)
print(f"cnpj_ns={ns:.1f}\ncnpj_valid={valid}")
