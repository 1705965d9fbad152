#!/usr/bin/env python3
"""One transformer block's forward pass in PyTorch, for `tkprobe roofline --profiler-range`.

A pre-norm block of a 2048-wide model (16 heads of 128, MLP 4x) over --batch sequences of --seq
tokens, bf16: LayerNorm, the QKV projection, scaled_dot_product_attention (causal; cuDNN's kernel
where PyTorch has it, else its default choice), the output projection, LayerNorm, and the MLP. It
runs --warmup passes, then one between torch.cuda.profiler.start() and stop(), the range
`tkprobe roofline --profiler-range` has ncu profile:

    tkprobe roofline --profiler-range -- python3 scripts/roofline_model.py
"""
import argparse
import sys

import torch
import torch.nn.functional as F

HIDDEN, HEADS, MLP_RATIO = 2048, 16, 4


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(HIDDEN)
        self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.out = torch.nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.norm2 = torch.nn.LayerNorm(HIDDEN)
        self.up = torch.nn.Linear(HIDDEN, MLP_RATIO * HIDDEN, bias=False)
        self.down = torch.nn.Linear(MLP_RATIO * HIDDEN, HIDDEN, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(b, n, HIDDEN))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def attention_backend():
    """cuDNN's SDPA where this PyTorch has it, so the profile holds a named peer's kernel."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=3, help="unprofiled passes first")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    block = Block().cuda().to(torch.bfloat16)
    x = torch.randn(args.batch, args.seq, HIDDEN, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad(), attention_backend():
        for _ in range(args.warmup):
            block(x)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        block(x)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
