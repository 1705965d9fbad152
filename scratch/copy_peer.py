import sys, torch
n = 1 << 30
x = torch.randint(0, 2**31 - 1, (n // 4,), dtype=torch.int32, device="cuda")
y = torch.empty_like(x)
if "--once" in sys.argv:
    y.copy_(x); torch.cuda.synchronize(); sys.exit()
for size in [1 << 28, 1 << 30]:
    a, b = x[: size // 4], y[: size // 4]
    for _ in range(5): b.copy_(a)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = []
    for _ in range(50):
        s.record(); b.copy_(a); e.record(); e.synchronize(); t.append(s.elapsed_time(e))
    t.sort()
    print(f"torch copy_ {size>>20} MiB: median {2*size/t[25]/1e9:.3f} TB/s, best {2*size/t[0]/1e9:.3f}")
    assert torch.equal(a, b)
