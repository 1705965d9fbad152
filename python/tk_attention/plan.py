"""A packed batch's passes prepared once for fixed tensors, so that a CUDA graph can capture them:
FlashInfer's plan, then run, for loops whose batch composition repeats (serving: a graph per
composition). Making a plan reads the offsets back (a sync) and builds each sequence's tensor maps
and the work tables, which point at the tensors given; forward() and backward() are then kernel
launches alone on PyTorch's current stream (no host sync, no allocation). A plan writes its own
out and lse (and dq, dk, dv), allocated once; new inputs go into the tensors it was made with
(copy_ them in before a replay).

    plan = tk_attention.VarlenPlan(q, k, v, cu_seqlens_q, cu_seqlens_k, max_q, max_k, causal=True, d_o=d_o)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.forward()
        plan.backward()
    q.copy_(next_q); ...; graph.replay()  # plan.out, plan.dq, plan.dk, plan.dv
"""
import torch

from . import library, ops
from .checks import Unsupported, packed_tma_refusal


class VarlenPlan:
    """varlen_attention's forward (and, given d_o, its backward) for these tensors: the checks and
    semantics of varlen_attention, D 64 or 128 where d_o is given (96 and 256 forward only)."""

    def __init__(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                 softmax_scale=None, d_o=None, deterministic=False):
        p = ops.varlen_problem(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale,
                               read=True, needs_gradient=d_o is not None)
        if d_o is not None and (d_o.shape != q.shape or packed_tma_refusal(ops.describe("d_o", d_o, True))):
            raise Unsupported(f"tk_attention: d_o is {tuple(d_o.shape)} with strides {d_o.stride()}: give a tensor "
                              f"of q's shape {tuple(q.shape)} whose rows the TMA reads (as q's)")
        self._device, self._releases, self._backward = q.device, [], None
        self._tensors = (q, k, v, d_o)  # the maps point at them: kept alive with the plan
        self.out, self.lse = torch.empty_like(q), ops.varlen_lse(q)
        offsets_q, offsets_k, *shape = ops.varlen_args(p)
        lib = library.loaded()
        with torch.cuda.device(self._device):
            self._forward = self._kept(ops.prepared(
                lib.tk_attention_varlen_create, lib.tk_attention_varlen_launch, lib.tk_attention_varlen_destroy,
                q.data_ptr(), k.data_ptr(), v.data_ptr(), self.out.data_ptr(), self.lse.data_ptr(), offsets_q,
                offsets_k, *shape, ops.packed_strides((q, k, v, self.out))))
            if d_o is None:
                return
            self.dq, self.dk, self.dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            dq_path = library.DQ_PATHS["deterministic" if deterministic else "fastest"]
            scratch_bytes = lib.tk_attention_varlen_backward_scratch_bytes(offsets_q, offsets_k, *shape, dq_path)
            self._scratch = torch.empty(scratch_bytes, dtype=torch.uint8, device=q.device)
            tensors = (q, k, v, self.out, d_o, self.dq, self.dk, self.dv)
            self._backward = self._kept(ops.prepared(
                lib.tk_attention_varlen_backward_create, lib.tk_attention_varlen_backward_launch,
                lib.tk_attention_varlen_backward_destroy, *(t.data_ptr() for t in tensors[:5]), self.lse.data_ptr(),
                *(t.data_ptr() for t in tensors[5:]), offsets_q, offsets_k, *shape, ops.packed_strides(tensors),
                self._scratch.data_ptr(), dq_path))

    def _kept(self, made):
        """A prepared pass's launch_on, its release kept for close()."""
        launch_on, release = made
        self._releases.append(release)
        return launch_on

    def _launch(self, launch_on):
        with torch.cuda.device(self._device):
            launch_on(torch.cuda.current_stream().cuda_stream)

    def forward(self):
        """O into self.out (and the row logsumexp into self.lse, [heads][total_q]); returns self.out."""
        self._launch(self._forward)
        return self.out

    def backward(self):
        """dQ, dK, dV of the plan's d_o into self.dq, self.dk, self.dv, from the last forward's out and lse."""
        if self._backward is None:
            raise Unsupported("tk_attention: this VarlenPlan has no backward: give d_o when making it")
        self._launch(self._backward)
        return self.dq, self.dk, self.dv

    def close(self):
        """Frees the prepared passes (their tables in device memory): the plan must outlive every graph
        that captured it, and cannot run after."""
        releases = getattr(self, "_releases", [])  # none where making the plan was refused
        while releases:
            releases.pop()()

    def __del__(self):
        self.close()
