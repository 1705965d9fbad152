#!/usr/bin/env python3
"""Trains one small attention model three times from one seed and compares the loss curves.

The model: a few pre-norm transformer blocks (fused QKV projection viewed (B, N, H, D) and
transposed, so the attention reads the projection in place; causal attention; an MLP) learning a
copy task on random tokens (predict the token `LAG` places back), fp32 weights, attention in bf16.
The runs differ only in the attention: the tk_attention package (the DSL's kernels), PyTorch's SDPA
(its default backend: flash or cuDNN), and SDPA's math backend (a third bf16 implementation). With
--compile every run's model is torch.compile(fullgraph=True)'d: no graph break allowed. With
--packed every step's sequences have random lengths (right-padded to --seq, padding out of the
loss): the drop-in packs the valid tokens and runs tk_attention.varlen_attention, SDPA the causal
padded batch (its valid rows see the same keys).

The rule. Two correct bf16 implementations round differently, so their curves drift apart by
"bf16 noise"; the two SDPA backends measure how far in this very run. Losses are averaged over
windows of --window steps; in every window the drop-in's mean must lie within
    max(REL_FLOOR x SDPA's mean, NOISE_FACTOR x the largest |math - SDPA| gap over all windows)
of SDPA's, and the last window must be below the first (the model learned, so the agreement means
something). A wrong gradient (a missing scale, a dropped tile) fails the first and an unstable one
the second. Exit 0 when both hold, 1 when not, 77 without torch, an sm_90 GPU or the installed
package, 2 on bad options.

    scripts/train_check.py [--steps 300] [--compile | --packed] [--tk-lib build/kernels/libtk_attention_c.so]
"""
import argparse
import os
import sys

REL_FLOOR = 0.02
NOISE_FACTOR = 3.0
LAG = 3  # the copy task's offset: attention must find the token LAG places back


def windows(losses, size):
    """Means of consecutive windows of `size` steps (the last one possibly shorter)."""
    return [sum(losses[i:i + size]) / len(losses[i:i + size]) for i in range(0, len(losses), size)]


def judge(ours, sdpa, math_, window):
    """(passed, lines): the rule above on three loss curves. Plain Python: tests/host runs it."""
    w_ours, w_sdpa, w_math = windows(ours, window), windows(sdpa, window), windows(math_, window)
    noise = max(abs(m - s) for m, s in zip(w_math, w_sdpa))
    lines = [f"{'steps':>11} {'drop-in':>9} {'sdpa':>9} {'math':>9} {'|ours-sdpa|':>12} {'allowed':>9}"]
    passed = True
    for i, (o, s, m) in enumerate(zip(w_ours, w_sdpa, w_math)):
        allowed = max(REL_FLOOR * s, NOISE_FACTOR * noise)
        ok = abs(o - s) <= allowed  # NaN fails
        passed &= ok
        first = i * window
        lines.append(f"{first:>5}-{min(first + window, len(ours)) - 1:<5} {o:9.4f} {s:9.4f} {m:9.4f} "
                     f"{abs(o - s):12.4f} {allowed:9.4f}{'' if ok else '  <- beyond bf16 noise'}")
    learned = w_ours[-1] < w_ours[0] and w_sdpa[-1] < w_sdpa[0]
    lines.append(f"bf16 noise (largest |math - sdpa| window gap): {noise:.4f}; "
                 f"loss {w_sdpa[0]:.3f} -> {w_sdpa[-1]:.3f} (sdpa), {w_ours[0]:.3f} -> {w_ours[-1]:.3f} (drop-in)")
    if not learned:
        lines.append("the loss did not fall: the comparison says nothing")
    return passed and learned, lines


def build_model(torch, attend, vocab, width, heads, layers):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x, lengths):
            b, n, _ = x.shape
            qkv = self.qkv(self.norm1(x)).to(torch.bfloat16).view(b, n, 3, heads, width // heads)
            q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))  # (B, H, N, D) views: rows 3 x width apart
            a = attend(q, k, v, lengths).transpose(1, 2).reshape(b, n, width).float()
            x = x + self.proj(a)
            return x + self.mlp(self.norm2(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            # Sinusoids: a fixed offset is a linear map of them, so a head learns "LAG back" quickly.
            position = torch.arange(4096).unsqueeze(1) / 10000 ** (torch.arange(0, width, 2) / width)
            self.register_buffer("position", torch.cat([position.sin(), position.cos()], 1).unsqueeze(0))
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.head = nn.Linear(width, vocab)

        def forward(self, tokens, lengths):
            x = self.embed(tokens) + self.position[:, :tokens.shape[1]]
            for block in self.blocks:
                x = block(x, lengths)
            return self.head(x)

    return Model()


def train(torch, attend, args):
    """The loss at every step, from args.seed: the same weights, data and order for every `attend`."""
    torch.manual_seed(args.seed)
    model = build_model(torch, attend, args.vocab, args.width, args.heads, args.layers).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if args.compile:
        model = torch.compile(model, fullgraph=True)
    data = torch.Generator(device="cuda").manual_seed(args.seed + 1)
    losses = []
    for _ in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda", generator=data)
        lengths = torch.full((args.batch,), args.seq, device="cuda")
        if args.packed:
            lengths = torch.randint(LAG + 1, args.seq + 1, (args.batch,), device="cuda", generator=data)
        logits = model(tokens, lengths)[:, LAG:]
        scored = torch.arange(LAG, args.seq, device="cuda")[None, :] < lengths[:, None]  # no padding in the loss
        loss = torch.nn.functional.cross_entropy(logits[scored], tokens[:, :-LAG][scored])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps per run (the ctest runs 60)")
    parser.add_argument("--window", type=int, default=20, help="steps per averaged window")
    parser.add_argument("--tk-lib", help="a built libtk_attention_c.so (default: the one the package carries)")
    parser.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True) every run's model")
    parser.add_argument("--packed", action="store_true",
                        help="sequences of random lengths, packed for tk_attention.varlen_attention")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--width", type=int, default=512, help="model width: heads x head dim (64 or 128)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    if args.steps < 2 * args.window:
        parser.error(f"--steps {args.steps}: give at least two windows ({2 * args.window}) to see the loss fall")
    if args.width % args.heads or args.width // args.heads not in (64, 128):
        parser.error(f"--width {args.width} --heads {args.heads}: the head dim width / heads must be 64 or 128")
    if args.seq <= LAG or args.seq > 4096:
        parser.error(f"--seq {args.seq}: give {LAG + 1}..4096")
    if args.packed and args.compile:
        parser.error("--packed --compile: varlen_attention reads its offsets back each call; give one of them")
    if args.tk_lib and not os.path.isfile(args.tk_lib):
        parser.error(f"--tk-lib {args.tk_lib}: no such file (give a built libtk_attention_c.so, or leave it out)")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("train_check.py: skipped: no torch")
        return 77
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("train_check.py: skipped: needs a CUDA device of compute capability 9.0 (the kernels are sm_90a)")
        return 77
    try:
        import tk_attention
    except ImportError:
        print(f"train_check.py: skipped: tk_attention is not installed for {sys.executable}: pip install . in a "
              "checkout (python/README.md)")
        return 77
    tk_attention.load(args.tk_lib)

    def sdpa(q, k, v, lengths):  # right padding: causal rows of a sequence see its keys alone
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def math_sdpa(q, k, v, lengths):  # the math backend as an op: sdpa_kernel() breaks a fullgraph compile
        return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0]

    def drop_in(q, k, v, lengths):
        if not args.packed:
            return tk_attention.scaled_dot_product_attention(q, k, v, is_causal=True)
        b, h, n, d = q.shape
        valid = torch.arange(n, device=q.device)[None, :] < lengths[:, None]
        cu = F.pad(lengths.cumsum(0), (1, 0)).to(torch.int32)
        o = tk_attention.varlen_attention(*(t.transpose(1, 2)[valid] for t in (q, k, v)), cu, cu, n, n, causal=True)
        return q.new_zeros(b, n, h, d).index_put((valid,), o).transpose(1, 2)

    ours = train(torch, drop_in, args)
    sdpa = train(torch, sdpa, args)
    math_ = train(torch, math_sdpa, args)
    passed, lines = judge(ours, sdpa, math_, args.window)
    print("\n".join(lines))
    print("PASSED: the drop-in's loss curve agrees with SDPA's within bf16 noise" if passed else
          "FAILED: the drop-in's loss curve leaves SDPA's by more than bf16 noise")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
