# Shape of google-research/fast-soft-sort issue #7: the user checks the
# gradient of a soft-sorted vector, but rebinds the leaf's name to the
# soft_sort output, so `conf.grad` is read on a non-leaf tensor.
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


# --- plain-torch/numpy stand-in for fast_soft_sort.pytorch_ops.soft_sort ---
def _isotonic_l2_decreasing(y):
    """Pool-adjacent-violators: argmin ||v - y||^2 s.t. v_1 >= v_2 >= ..."""
    blocks = []  # [sum, count]
    for val in y:
        blocks.append([val, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    sol = np.concatenate([np.full(c, s / c) for s, c in blocks])
    return sol, [c for _, c in blocks]


class _SoftSortFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, sign, reg):
        v = values.detach().cpu().numpy()
        outs, grads_info = [], []
        for row in v:
            n = row.shape[0]
            w = np.arange(1, n + 1)[::-1] / reg
            x = sign * row
            perm = np.flip(np.argsort(x))
            s = x[perm]
            sol, sizes = _isotonic_l2_decreasing(w - s)
            outs.append(sign * (w - sol))
            grads_info.append((perm, sizes))
        ctx.grads_info = grads_info
        return torch.from_numpy(np.stack(outs)).to(values)

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out.detach().cpu().numpy()
        res = np.zeros_like(g)
        for i, (perm, sizes) in enumerate(ctx.grads_info):
            avg = np.zeros_like(g[i])
            start = 0
            for size in sizes:
                avg[start:start + size] = g[i, start:start + size].mean()
                start += size
            res[i, perm] = avg
        return torch.from_numpy(res).to(grad_out), None, None


def soft_sort(values, direction="ASCENDING", regularization_strength=1.0):
    sign = 1 if direction == "DESCENDING" else -1
    return _SoftSortFn.apply(values, sign, regularization_strength)
# ---------------------------------------------------------------------------


conf = torch.tensor([[0.1, 0.7, 0.2]], dtype=torch.float64, requires_grad=True)

# Sorting in descending order
conf = soft_sort(conf, direction="DESCENDING", regularization_strength=1)  # <- non_leaf_watched

ideal = torch.tensor([[1.0, 0.0, 0]], dtype=torch.float64)
l2 = nn.MSELoss()

print("Grad before doing loss.backward()")
print(conf.grad)

loss = l2(conf, ideal)
loss.backward()

print("Loss = {:.2f}".format(loss))
print("Grad after loss.backward()")
print(conf.grad)
